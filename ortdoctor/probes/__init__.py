"""Inspect: read the environment from files and NVML, never importing onnxruntime or torch."""

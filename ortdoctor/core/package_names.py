"""The PyPI names of onnxruntime's distributions, spelled once.

All of them install into the same ``onnxruntime/`` directory, so two in one environment overwrite each
other's files; only ``onnxruntime-gpu`` has the CUDA and TensorRT providers.
"""

from __future__ import annotations

ORT_CPU = "onnxruntime"  # also the import name and the package directory
ORT_GPU = "onnxruntime-gpu"
ORT_DIRECTML = "onnxruntime-directml"
ORT_OPENVINO = "onnxruntime-openvino"
ORT_QNN = "onnxruntime-qnn"
ORT_NIGHTLY = "ort-nightly"

"""The names onnxruntime gives its execution providers, spelled once.

Plain constants, no imports: the smoke and model-check children, which run in the user's interpreter,
read them too. What ortdoctor knows about each GPU provider (its library, the libraries it loads, how a
session is put on it) is the table of :mod:`ortdoctor.core.execution_providers`.
"""

from __future__ import annotations

CUDA_EP = "CUDAExecutionProvider"
TENSORRT_EP = "TensorrtExecutionProvider"
TENSORRT_RTX_EP = "NvTensorRTRTXExecutionProvider"
CPU_EP = "CPUExecutionProvider"

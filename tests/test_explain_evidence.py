"""What a text shows, read into evidence with the line each fact came from (ortdoctor.diagnose.text_evidence).

Every line here is quoted from a public thread (named beside it), as the user pasted it.
"""

from __future__ import annotations

import pytest

from ortdoctor.diagnose.classify import classify
from ortdoctor.diagnose.text_evidence import Evidence, EvidenceScanner
from ortdoctor.diagnose.text_normalise import normalise_line


def _facts(*lines: str) -> set[tuple[str, str]]:
    scanner = EvidenceScanner()
    for line in lines:
        scanner.feed(normalise_line(line))  # as the classifier feeds it
    return {(e.fact, e.value) for e in scanner.items}


@pytest.mark.parametrize(("line", "expected"), [
    # flashinfer-ai/flashinfer#3255: nvidia-smi's header is the driver and the highest CUDA it supports,
    # not an installed CUDA
    ("| NVIDIA-SMI 590.48.01              Driver Version: 590.48.01      CUDA Version: 13.1     |",
     {("driver.version", "590.48.01"), ("driver.cuda", "13.1")}),
    # microsoft/onnxruntime#22809
    ("cuda 12.6, cudnn 9.3, jetpack 6.1", {("cuda.version", "12.6"), ("cudnn.version", "9.3"),
                                          ("env.jetson", "jetpack")}),
    ("Failed to create CUDAExecutionProvider. Require cuDNN 8.* and CUDA 12.*. Please install all dependencies",
     {("ort.cudnn_major", "8"), ("ort.cuda_major", "12")}),
    # onnx/onnx-tensorrt#982
    ("**TensorRT Version**: 10.2.0.19", {("tensorrt.version", "10.2.0.19")}),
    # microsoft/onnxruntime#20223
    ("apply yolov8n.onnx with cuda12.4 cudnn9 onnxruntime-win-x64-cuda12-1.17.1",
     {("cuda.version", "12.4"), ("cudnn.version", "9")}),
    # microsoft/onnxruntime#26181 (title)
    ("no kernel image is available for execution on the device [rtx 5090 laptop, wan2.2 animate, DWPreprocessor, "
     "onnxruntime-gpu]", {("gpu.name", "rtx 5090 laptop"), ("gpu.compute_capability", "sm_120")}),
    # immich-app/immich#9720
    ("                             │ /opt/venv/lib/python3.11/site-packages/onnxrunt │",
     {("python.version", "3.11")}),
    # microsoft/onnxruntime#10563: the CUDA toolkit's folder names its version
    ("Module loaded: 00007ff8`02c70000 00007ff8`02cf4000   C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.6"
     "\\bin\\cudart64_110.dll ", {("cuda.version", "11.6")}),
    # microsoft/onnxruntime#8325
    ('2021-07-07 19:07:55.8302585 [E:onnxruntime:Default, provider_bridge_ort.cc:1001 onnxruntime::ProviderLibrary::'
     'Get] LoadLibrary failed with error 126 "The specified module could not be found." when trying to load '
     '"C:\\Python\\Python39\\lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_tensorrt.dll"',
     {("python.version", "3.9"), ("ort.copies", "onnxruntime")}),
])
def test_each_fact_is_read_with_its_line(line: str, expected: set[tuple[str, str]]) -> None:
    assert expected <= _facts(line)


def test_the_build_requirement_line_says_nothing_about_what_is_installed() -> None:
    facts = _facts("Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*, and the latest MSVC "
                   "runtime.")
    assert {f for f, _ in facts} == {"ort.cudnn_major", "ort.cuda_major"}


def test_every_item_keeps_its_line_and_number() -> None:
    scanner = EvidenceScanner()
    for line in ("### Execution Provider Library Version", "", "cuda 12.6, cudnn 9.3, jetpack 6.1"):
        scanner.feed(line)
    item = scanner.items[0]
    assert isinstance(item, Evidence)
    assert item.line == "cuda 12.6, cudnn 9.3, jetpack 6.1"
    assert item.line_no == 3


def test_a_status_error_with_no_evidence_says_which_evidence_would_decide() -> None:
    # immich-app/immich#22982: the cause (cuDNN 9.11+ on a Pascal GPU) is not in the text
    fix = classify("Immich 2.1.0 causes repeated CUDNN_STATUS_EXECUTION_FAILED errors in immich-machine-learning "
                   "during ONNX inference on NVIDIA GPUs.")[0].fix
    assert "ortdoctor check" in fix
    assert "9.11" in fix


def test_a_fallback_line_with_evidence_against_it_gets_no_canned_advice() -> None:
    # microsoft/onnxruntime#22809 (corpus 171): ORT's own requirement line, and the cuDNN the issue form shows
    text = ("`\"2024-11-12 10:07:56.895559377 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:965 "
            "CreateExecutionProviderInstance] Failed to create CUDAExecutionProvider. Require cuDNN 8.* and CUDA 12.*. "
            "Please install all dependencies as mentioned in the GPU requirements page (https://onnxruntime.ai/docs/"
            "execution-providers/CUDA-ExecutionProvider.html#requirements), make sure they're in the PATH, and that "
            "your GPU is supported.\"`\n"
            "cuda 12.6, cudnn 9.3, jetpack 6.1\n")
    ids = [m.finding_id for m in classify(text)]
    assert ids[0] == "cudnn-major-mismatch"
    assert "cuda-ep-fell-back-to-cpu" not in ids

"""What a text shows, read into evidence with the line each fact came from (ortdoctor.diagnose.text_evidence).

Every line here is quoted from a public thread (named beside it), as the user pasted it.
"""

from __future__ import annotations

import pytest

from ortdoctor.decide import gpu_names
from ortdoctor.diagnose.classify import classify, classify_with_stack
from ortdoctor.diagnose.stack import Stack
from ortdoctor.diagnose.text_evidence import Evidence, EvidenceScanner
from ortdoctor.diagnose.text_normalise import normalise_line
from ortdoctor.diagnose.textlines import iter_lines


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
    # microsoft/onnxruntime#8177: an issue form's paired line gives CUDA first, cuDNN second
    ("- CUDA/cuDNN version: 11.0.3 / 8.0.2.39", {("cuda.version", "11.0"), ("cudnn.version", "8.0.2.39")}),
    # microsoft/onnxruntime#7745: the same form with a cuDNN 7; "cuDNN version: 10.1" is not a cuDNN
    ("- CUDA/cuDNN version: 10.1/7.6", {("cuda.version", "10.1"), ("cudnn.version", "7.6")}),
    # microsoft/onnxruntime#22491: torch's integer CUDNN_VERSION
    ("HJH Check CUDA Ver.12.1 HJH Check Torch Ver.2.3.1+cu121 HJH Check cuDNN Ver. 8907 HJH Check ONNXRuntime Ver. "
     "1.19.2", {("cuda.version", "12.1"), ("cudnn.version", "8.9.7")}),
    # microsoft/onnxruntime#21769: a full-width parenthesis from a CJK input method
    ("I used onnxruntime-gpu==1.18.1 before, it can load onnx and work in CUDA\uff0811.7\uff09.",
     {("cuda.version", "11.7")}),
    # AlexeyAB/darknet#2836: a CUDA 9
    ("- CUDA 9.0.176", {("cuda.version", "9.0")}),
    # mudler/LocalAI#9948: a CUDA major named without its minor
    ('the "latest" containers f\u00fcr cuda13 dont work with my V100.',
     {("cuda.major", "13"), ("gpu.name", "V100"), ("gpu.compute_capability", "sm_70")}),
    # microsoft/onnxruntime#7748 and #26073: a one-digit data-centre GPU
    ("- GPU model and memory: NVIDIA T4, 16G", {("gpu.name", "NVIDIA T4"), ("gpu.compute_capability", "sm_75")}),
    ("- **GPU**: NVIDIA Tesla T4", {("gpu.name", "NVIDIA Tesla T4"), ("gpu.compute_capability", "sm_75")}),
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


def _corpus_text(prefix: str) -> str:
    from tests.support.explain_corpus import load_corpus
    return next(e.text for e in load_corpus() if e.name.startswith(prefix))


def test_a_gpu_older_than_its_cuda_runtime_is_the_cause_not_cudnn_status_advice() -> None:
    # AlexeyAB/darknet#2836 (corpus 188): an RTX 2070 (Turing) under CUDA 9.0; CUDA 10.0 fixed it
    found = classify(_corpus_text("188-"))
    assert found[0].finding_id == "cuda-runtime-older-than-gpu"
    assert "cudnn-status-error" not in [m.finding_id for m in found]


def test_a_gpu_a_library_dropped_is_a_cause_even_without_an_error_line() -> None:
    # mudler/LocalAI#9948 (corpus 191): a V100 under CUDA 13 images, no log at all
    found = classify(_corpus_text("191-"))
    assert [m.finding_id for m in found] == ["gpu-dropped-by-library"]


def test_a_gpu_between_two_cuda_versions_gets_no_memory_advice() -> None:
    # pluja/whishper#172 (corpus 190): an RTX 5070 Ti, the image's CUDA 11.8 and the host's 12.9
    fix = classify(_corpus_text("190-"))[0].fix
    assert "Free GPU memory" not in fix
    assert "12.8" in fix
    assert "ortdoctor check" in fix


def test_an_issue_form_pair_does_not_read_cuda_as_cudnn() -> None:
    # microsoft/onnxruntime#8177 (corpus 194): the 1.8 loader's wording and CUDA 11.0.3 / cuDNN 8.0.2.39, which agree
    ids = [m.finding_id for m in classify(_corpus_text("194-"))]
    assert ids[0] == "providers-shared-load-failed"
    assert "cudnn-major-mismatch" not in ids


def test_the_issue_form_names_the_release_and_the_binding() -> None:
    # microsoft/onnxruntime#19292 (corpus 185): the version field holds "onnxrumtime 1.16.2"; 1.16 is CUDA 11
    assert classify(_corpus_text("185-"))[0].finding_id == "cuda-major-mismatch"
    # microsoft/onnxruntime#21651 (corpus 202): the API field says Java, so the fix names the Java artifact
    found = classify(_corpus_text("202-"))[0]
    assert found.finding_id == "cuda-major-mismatch"
    assert "onnxruntime_gpu" in found.fix
    assert "pip install" not in found.fix


@pytest.mark.parametrize(("text", "soname"), [
    # netease-youdao/QAnything#328 (title): a CUDA 12.4 machine, a CUDA 11 onnxruntime-gpu
    ("[BUG] Install in python env, libcublasLt.so.11 is missing but use CUDA 12", "libcublasLt.so.11"),
    # microsoft/onnxruntime#20656 (title): onnxruntime-gpu 1.17.1 (CUDA 11) on CUDA 12.4
    ("install cuda 12.4, but got libcublas.so.11 missing error", "libcublas.so.11"),
])
def test_a_library_missing_in_a_persons_own_words_is_read(text: str, soname: str) -> None:
    found = classify(text)[0]
    assert found.finding_id == "cuda-major-mismatch"
    assert soname in found.what


def test_a_library_named_beside_other_words_is_not_missing() -> None:
    # microsoft/onnxruntime-genai#694: the person found the library; nothing says it is missing
    text = ('If I run a search for "libcudnn.so.8" I can found it, but seems something is not properly configured '
            "at runtime.")
    assert classify(text) == []


# Steffenhir/GraXpert#205: cuDNN 9.6 from NVIDIA's installer, and the ldd of a cuDNN 8 build
_GRAXPERT = """\
lrwxrwxrwx 1 root root     17 Nov 22 08:48 /usr/lib/x86_64-linux-gnu/libcudnn.so.9 -> libcudnn.so.9.6.0
-rw-r--r-- 1 root root 125136 Nov 22 08:48 /usr/lib/x86_64-linux-gnu/libcudnn.so.9.6.0
```

The GraXpert-linux/lib/onnxruntime/capi/libonnxruntime_providers_cuda.so requires the previous version 8 :

```
ldd GraXpert-linux/lib/onnxruntime/capi/libonnxruntime_providers_cuda.so
        linux-vdso.so.1 (0x00007ffc30b92000)
        libcublasLt.so.12 => /usr/local/cuda/targets/x86_64-linux/lib/libcublasLt.so.12 (0x0000712a6fc00000)
        libcublas.so.12 => /usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.12 (0x0000712a69000000)
        libcudnn.so.8 => not found
"""


def test_library_files_a_listing_or_ldd_shows_are_evidence_of_what_is_installed() -> None:
    assert _facts(*_GRAXPERT.splitlines()) >= {("cudnn.version", "9.6.0"), ("cuda.major", "12")}
    # a soname in a loader's message is what was asked for, not what is there
    assert not _facts("libcudnn.so.8: cannot open shared object file: No such file or directory")


def test_ldd_not_found_against_an_installed_major_is_a_major_mismatch() -> None:
    found = classify(_GRAXPERT)[0]
    assert found.finding_id == "cudnn-major-mismatch"
    assert "cuDNN 9" in found.what


def _sample(name: str) -> str:
    from pathlib import Path
    return (Path(__file__).parent / "data" / "errors" / name).read_text(encoding="utf-8").splitlines()[-1]


def test_a_loader_message_says_which_library_is_missing_not_the_prose_reading() -> None:
    # failure-modes.md mode 5: the provider DLL is what was being loaded; the loader names its missing dependency
    found = classify(_sample("mode05_which_is_missing.txt"))
    assert found[0].details.get("soname", "cudnn64_9.dll") == "cudnn64_9.dll"
    assert "onnxruntime_providers_cuda.dll" not in found[0].what
    # mode 18 (facebookresearch/nougat#105): cuDNN 8 loading its sub-library, when libcuda.so is what is missing
    found = classify(_sample("mode18_wsl_libcuda.txt"))
    assert all("libcudnn_cnn_infer.so.8" not in m.what for m in found)


@pytest.mark.parametrize("line", [
    # microsoft/onnxruntime-genai#1195
    ("onnxruntime_genai.onnxruntime_genai.OrtException: Non-zero status code returned while running Gather node. "
     "Name:'/model/embed_tokens/Gather' Status Message: CUDA error cudaErrorUnsupportedPtxVersion:the provided PTX was "
     "compiled with an unsupported toolchain."),
    # mit-han-lab/inter-operator-scheduler#4
    "Cuda failure: 222 the provided PTX was compiled with an unsupported toolchain.",
])
def test_ptx_from_a_newer_toolkit_than_the_driver_is_an_old_driver(line: str) -> None:
    found = classify(line)[0]
    assert found.finding_id == "driver-too-old"
    assert "222" in found.what


@pytest.mark.parametrize(("text", "expected", "fix_has"), [
    # andreimargeloiu/WPFS#3 (torch 1.10.1 from the default index; the fix was the +cu111 build)
    ("NVIDIA A100-SXM4-80GB with CUDA capability sm_80 is not compatible with the current PyTorch installation.\n"
     "The current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70.",
     "cuda-runtime-older-than-gpu", "CUDA 11.0"),
    # RetroUpgrade-YouTube/Hi3DGen_1Click_installer#5: an RTX 5080 Laptop GPU
    ("NVIDIA GeForce RTX 5080 Laptop GPU with CUDA capability sm_120 is not compatible with the current PyTorch "
     "installation.\nThe current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_61 sm_70 sm_75 sm_80 sm_86 "
     "sm_90.", "cuda-runtime-older-than-gpu", "12.8"),
    # pytorch/pytorch#56552 (PyTorch's wording before 2.8 for a GPU below its minimum)
    ("Found GPU0 GeForce GTX 680 which is of cuda capability 3.0.\nPyTorch no longer supports this GPU because it is "
     "too old.\nThe minimum cuda capability that we support is 3.5.", "gpu-dropped-by-library", "sm_30"),
])
def test_pytorchs_capability_check_against_the_architectures_it_lists(text: str, expected: str, fix_has: str) -> None:
    found = classify(text)[0]
    assert found.finding_id == expected
    assert fix_has in found.fix


def test_a_gpu_tensorrt_dropped_is_the_cause_of_its_unsupported_sm() -> None:
    # NVIDIA/TensorRT#3826 (title): TensorRT names the SM in hex; 10.0 builds nothing for Pascal
    found = classify("Unsupported SM: 0x601 failure of TensorRT 10.0.1 on 1080ti")[0]
    assert found.finding_id == "gpu-dropped-by-library"
    assert "TensorRT 10.0" in found.what
    assert "TensorRT 8.6" in found.fix  # the newest TensorRT EP build (onnxruntime-gpu 1.17) that runs on Pascal


def test_tensorrt_running_out_of_memory_is_its_own_not_session_memory_advice() -> None:
    # NVIDIA/TensorRT#4258 (trtexec building an engine on an RTX 4060)
    text = ("[11/22/2024-13:40:47] [E] Error[1]: [defaultAllocator.cpp::allocate::31] Error Code 1: Cuda Runtime (out "
            "of memory)\n[11/22/2024-13:40:47] [E] Error[9]: Error Code: 9: Skipping tactic 0x0000000000000000 due to "
            "exception [tunable_graph.cpp:create:117] autotuning: User allocator error allocating 15485030400-byte buffer")
    ids = [m.finding_id for m in classify(text)]
    assert ids[0] == "tensorrt-engine-build-failed"
    assert "gpu-out-of-memory" not in ids


def test_more_gpu_names_are_read() -> None:
    # NVIDIA/TensorRT#3589 (GT 730), microsoft/onnxruntime#21415 (Quadro P6000)
    assert _facts("**NVIDIA GPU**: GT 730") >= {("gpu.compute_capability", "sm_35")}
    assert _facts("NVIDIA Quadro P6000 (Pascal)") >= {("gpu.compute_capability", "sm_61")}


@pytest.mark.parametrize("text", [
    # omarabid59/yolov8-triton#6 (a Triton 23.02 image on driver 470)
    "ERROR: This container was built for NVIDIA Driver Release 525.85 or later, but\n"
    "       version 470.199.02 was detected and compatibility mode is UNAVAILABLE.",
    # eugr/spark-vllm-docker#266 (a DGX Spark on driver 580)
    "ERROR: This container was built for NVIDIA Driver Release 590.48 or later, but\n"
    "       version 580.159.03 was detected and compatibility mode is UNAVAILABLE.",
])
def test_an_nvidia_container_newer_than_the_host_driver(text: str) -> None:
    found = classify(text)[0]
    assert found.finding_id == "driver-too-old"
    assert found.details["needs_driver"] in text
    assert found.details["driver"] in text


@pytest.mark.parametrize(("line", "soname"), [
    # glibc's dlerror in other languages, as public logs show it
    ("libpng12.so.0: Kann die Shared-Object-Datei nicht öffnen: Datei oder Verzeichnis nicht gefunden",
     "libpng12.so.0"),
    ("ERROR: libGLX_nvidia.so.0: 共有オブジェクトファイルを開けません:", "libGLX_nvidia.so.0"),
    ("Failed to open VDPAU backend libvdpau_nvidia.so: невозможно открыть разделяемый объектный файл: Нет такого "
     "файла или каталога", "libvdpau_nvidia.so"),
    ("ImportError: libcublas.so.9.0:无法打开共享对象文件:没有这样的文件或目录", "libcublas.so.9.0"),
])
def test_the_loaders_message_is_read_in_other_languages(line: str, soname: str) -> None:
    from ortdoctor.diagnose.text_observe import Scanner

    scanner = Scanner()
    scanner.feed(line)
    assert ("so_missing", soname) in scanner.hits


def test_a_drivers_highest_cuda_is_not_an_installed_cuda() -> None:
    # a public root-cause note on cudaErrorInsufficientDriver (found by code search; cuda-python 13 on driver 570)
    assert _facts("- **Driver**: 570.172.08 (supports CUDA 12.8)") == {("driver.version", "570.172.08")}


@pytest.mark.parametrize("line", [
    # facefusion/facefusion-docker#9 (fixed with a libnvrtc.so symbolic link to torch's versioned copy)
    "facefusion-docker-facefusion-cuda-1  | Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot "
    "open shared object file: No such file or directory",
    # v-iashin/Synchformer#9
    "`Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared object file: No such file "
    "or directory`.",
])
def test_an_unversioned_cuda_library_cudnn_opens_is_a_missing_cuda_library(line: str) -> None:
    found = classify(line)[0]
    assert found.finding_id == "cuda-lib-missing"
    assert "libnvrtc.so" in found.what
    assert "symbolic link" in found.fix


@pytest.mark.parametrize("line", [
    # HuangJunJie2017/BEVDet#314 (a TensorRT 22.07 image on an RTX 4090; 22.12 fixed it)
    "WARNING: Detected NVIDIA NVIDIA GeForce RTX 4090 GPU, which is not yet supported in this version of the "
    "container\nERROR: No supported GPU(s) detected to run this container",
    # fauxpilot/fauxpilot#248 (a Triton image on an RTX 4060)
    "triton-1         | WARNING: Detected NVIDIA NVIDIA GeForce RTX 4060 GPU, which is not yet supported in this "
    "version of the container\ntriton-1         | ERROR: No supported GPU(s) detected to run this container",
])
def test_an_nvidia_container_older_than_the_gpu(line: str) -> None:
    found = classify(line)[0]
    assert found.finding_id == "cuda-runtime-older-than-gpu"
    assert "newer release of the image" in found.fix


def test_the_release_a_python_prompt_prints_is_read() -> None:
    # a public Jetson set-up note (found by code search): the answer to onnxruntime.__version__ is the next line
    _, stack = classify_with_stack(iter_lines(">>> import onnxruntime\n>>> onnxruntime.__version__\n'1.1.2'\n"))
    assert stack.ort_version == "1.1.2"


def test_an_issue_forms_single_cuda_cudnn_answer_is_cudas() -> None:
    # a public Lightning issue form (found by code search): one version in the CUDA/cuDNN field is CUDA's
    assert _facts("#- CUDA/cuDNN version: 11.8") == {("cuda.version", "11.8")}


# -- readings of round 6: each a general reading, tested on lines quoted from the threads named --------------------

def _stack_of(text: str) -> Stack:
    return classify_with_stack(iter_lines(text))[1]


def test_an_issue_forms_version_outweighs_versions_named_in_prose() -> None:
    # microsoft/onnxruntime#6050: the prose names the release migrated from first
    text = ("I migrated my code from onnxruntime 1.4.0 to 1.5.2 version.\n"
            "- ONNX Runtime version: 1.5.2\n")
    assert _stack_of(text).ort_version == "1.5.2"


@pytest.mark.parametrize(("line", "version"), [
    # dudarenok-maker/Castwright#2534: the name in Markdown code
    ("`onnxruntime-gpu` 1.27 silently falls back to `CPUExecutionProvider` on this box's CUDA 12.4 / cuDNN mismatch,",
     "1.27"),
    # microsoft/onnxruntime#20571: the version in a note in brackets
    ("I am using the following content: Microsoft.ML.OnnxRuntime.GPU (nuget package VERSION 1.16.0)", "1.16.0"),
])
def test_a_release_named_in_code_or_in_brackets_is_read(line: str, version: str) -> None:
    assert _stack_of(line).ort_version == version


def test_versions_in_brackets_after_the_name_are_read() -> None:
    # microsoft/onnxruntime#20571, the reporter's comment
    assert _facts(" NVIDIA CUDA Tool Kit (VERSION 12.2) ", "CUDNN (VERSION 8.9)") == {
        ("cuda.version", "12.2"), ("cudnn.version", "8.9")}


def test_a_release_that_links_cuda_into_its_core_dll_against_the_machines_cuda_minor() -> None:
    # microsoft/onnxruntime#6050: .NET names the DllImport without its extension; 1.5 is built for CUDA 10.2, and
    # before CUDA 11 the minor is in the DLL names (the maintainer: "the CUDA requirement is 10.2 as of 1.5")
    text = ("Unable to load DLL 'onnxruntime': The specified module could not be found. (Exception from HRESULT: "
            "0x8007007E)\n- ONNX Runtime version: 1.5.2\n- CUDA/cuDNN version: CUDA 10.1\n")
    first = classify(text)[0]
    assert first.finding_id == "cuda-major-mismatch"
    assert "CUDA 10.2" in first.what
    assert "CUDA 10.1" in first.what


def test_the_nuget_release_and_the_toolkit_a_reporter_lists_decide_a_provider_126() -> None:
    # microsoft/onnxruntime#20571: the error, and the reporter's comment with the package and the toolkit
    text = ('[ErrorCode:RuntimeException] D:\\a\\_work\\1\\s\\onnxruntime\\core\\session\\provider_bridge_ort.cc:1193 '
            "onnxruntime::ProviderLibrary::Get [ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 \"\" "
            'when trying to load "D:\\Projects\\Yolov8.Net\\Yolo.Net.FromTest\\bin\\Debug\\net6.0-windows\\runtimes'
            '\\win-x64\\native\\onnxruntime_providers_cuda.dll\n'
            "I am using the following content: Microsoft.ML.OnnxRuntime.GPU (nuget package VERSION 1.16.0)\n"
            " NVIDIA CUDA Tool Kit (VERSION 12.2) \nCUDNN (VERSION 8.9)\n")
    first = classify(text)[0]
    assert first.finding_id == "cuda-major-mismatch"
    assert "CUDA 11" in first.what
    assert "CUDA 12" in first.what


@pytest.mark.parametrize("name", ["NVIDIA GeForce GTX 1080Ti", "RTX 3090Ti", "RTX 4070Super"])
def test_a_suffix_written_onto_the_number_is_still_the_gpu(name: str) -> None:
    # microsoft/onnxruntime#6050 ("GTX 1080Ti"); the others as people write them
    assert gpu_names.sm_of_name(name) is not None


def test_of_two_gpus_the_one_the_cuda_runtime_is_older_than_is_the_cause() -> None:
    # AlexeyAB/darknet#2836: works on a GTX 1050 Ti, fails on an RTX 2070, under CUDA 9.0
    text = ("On the setup with GTX 1050Ti, everything works perfectly. Yet, when I switch to RTX 2070 card, I've got "
            "the following error: \ncuDNN Error: CUDNN_STATUS_EXECUTION_FAILED\n- CUDA 9.0.176\n- cuDNN 7.2\n")
    first = classify(text)[0]
    assert first.finding_id == "cuda-runtime-older-than-gpu"
    assert first.details["sm"] == "sm_75"


def test_a_cuda_a_person_asks_about_installing_is_not_the_machines() -> None:
    # deepbeepmeep/Wan2GP#1513
    assert _facts("it wants cuda 12 but i have cuda 13 as i should as indicated in the guide.",
                  "what should i do?  Should I install cuda 12 or will that conflict?") == {
        ("cuda.major", "13"), ("cuda.installed", "13")}


@pytest.mark.parametrize(("line", "expected"), [
    # Kedreamix/Linly-Dubbing#41 (the issue's title): no space between the words and the version
    ("请问使用whisper转录时，安装了cudnn-8.9，已有libcudnn_ops.so.8还要求寻找libcudnn_ops.so.9.1.0，需要重装cudnn吗？",
     ("cudnn.version", "8.9")),
    # YaoFANGUK/video-subtitle-extractor#48: cuDNN 7 is a cuDNN too
    ("我发现好像是版本问题，我是GTX1650 TI的显卡，按照说明装的是cudn10.1和cudnn-7.6.5，对应的库应该是cudnn64_7.dll",
     ("cudnn.version", "7.6.5")),
])
def test_versions_written_onto_chinese_words_are_read(line: str, expected: tuple[str, str]) -> None:
    assert expected in _facts(line)


def test_a_library_a_person_says_is_missing_in_chinese_against_the_cudnn_installed() -> None:
    # YaoFANGUK/video-subtitle-extractor#48: "the GPU version reports it cannot find cudnn64_8.dll"; cuDNN 7.6.5
    # is installed
    text = ("我发现好像是版本问题，我是GTX1650 TI的显卡，按照说明装的是cudn10.1和cudnn-7.6.5，对应的库应该是cudnn64_7.dll\n"
            "但GPU版本报错说找不到cudnn64_8.dll, 这个肯定是没有的，GPU版本默认找cudnn-8+吗？\n")
    assert classify(text)[0].finding_id == "cudnn-major-mismatch"


def test_the_loaders_126_retold_in_markdown_code_is_read() -> None:
    # dme-compunet/YoloSharp#74: 1.19.1's CUDA 12 build uses cuDNN 9; cuDNN 8.9.7 is installed
    text = ("I am currently using ONNX Runtime with GPU support in a project based on the YoloV8.Gpu library. However, "
            "I am encountering a `LoadLibrary failed with error 126` when trying to use `onnxruntime_providers_cuda.dll`. "
            "I have CUDA 12.6 and cuDNN v8.9.7 installed. Could you please let me know which versions of CUDA and cuDNN "
            "are recommended for compatibility with ONNX Runtime version 1.19.1 in this context?")
    assert classify(text)[0].finding_id == "cudnn-major-mismatch"


def test_error_35_with_a_driver_that_runs_the_texts_cuda_is_a_driver_the_process_does_not_see() -> None:
    # imagegenius/docker-immich#349: driver 550.78 runs CUDA 12; the container's settings had a stray space
    text = ("CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version\n\nOS: UnRAID 6.12.10\n"
            "Nvidia Driver: v550.78 (Quadro RTX 4000 should fine for CUDA 12)\nImmich: v1.102.3\n")
    first = classify(text)[0]
    assert first.finding_id == "driver-missing"
    assert "550.78" in first.what



@pytest.mark.parametrize(("line", "major"), [
    ("it wants cuda 12 but i have cuda 13 as i should as indicated in the guide.", "13"),  # deepbeepmeep/Wan2GP#1513
    # dme-compunet/YoloSharp#128
    ("Additionally, my system has CUDA version 11.8, cuDNN version 8.5.0, and the platform is x64.Help!please!", "11"),
    # roflcoopter/viseron#1451
    ("Since the `amd64-cuda` image ships CUDA 12.x, pip resolving the newest `onnxruntime-gpu` at wheel-build time "
     "means", "12"),
    # cassiebreviu/StableDiffusion#4
    ("I installed CUDA Toolkit 12.1 and cudnn for Cuda12. Both are in the path. I'm running Windows 11 and Visual "
     "Studio 2022.", "12"),
    ("I have cuda V12.0 with CUDNN installed (if I didnt failed installation).", "12"),  # sstainba/Yolov8.Net#22
])
def test_a_cuda_a_person_says_the_machine_has_is_read(line: str, major: str) -> None:
    assert ("cuda.installed", major) in _facts(line)


def test_a_build_requirement_against_the_cuda_the_text_says_is_installed() -> None:
    # roflcoopter/viseron#1451: 1.27's CUDA 13 build (its Require line) in an image that ships CUDA 12; the prose
    # names both majors, the one the image ships is the machine's
    text = ("`fast-alpr`'s `onnx-gpu` extra (used for the `amd64-cuda` image only, per #a5a3c9a) depends on an "
            "unpinned `onnxruntime-gpu>=1.19.2`. As of `1.27.0`, `onnxruntime-gpu` dropped CUDA 12 support and links "
            "against `libcublas.so.13`/`cuDNN-cu13` instead of the CUDA 12 equivalents. Since the `amd64-cuda` image "
            "ships CUDA 12.x, pip resolving the newest `onnxruntime-gpu` at wheel-build time means the CUDA and "
            "TensorRT execution providers fail to load at runtime:\n\n```\n"
            "[E:onnxruntime:Default, provider_bridge_ort.cc:...] Failed to load library\n"
            ".../libonnxruntime_providers_cuda.so with error: libcublasLt.so.13: cannot\n"
            "open shared object file: No such file or directory\n...\n"
            "Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 13.*.\n```\n")
    first = classify(text)[0]
    assert first.finding_id == "cuda-major-mismatch"
    assert "CUDA 12" in first.fix


@pytest.mark.parametrize("line", [
    # cyrusbehr/tensorrt-cpp-api#78: solved by copying nvinfer_builder_resource_10.dll beside the executable
    "[2024-06-13 20:21:01.668] [error] 6: [libLoader.cpp::nvinfer1::rt::DynamicLibrary::Impl::Impl::288] Error Code 6: "
    "Internal Error (Unable to load library: nvinfer_builder_resource_10.dll)",
    # replicate/cog-triton#51: "The upstream TRT package didn't have that file. Fixed by upgrading to 10.2.0.post1"
    "[07/25/2024-13:52:57] [TRT] [E] IBuilder::buildSerializedNetwork: Error Code 6: API Usage Error (Unable to load "
    "library: libnvinfer_builder_resource_win.so.10.2.0: libnvinfer_builder_resource_win.so.10.2.0: cannot open shared "
    "object file: No such file or directory)",
])
def test_a_part_of_tensorrt_it_opens_on_demand_missing_is_an_incomplete_tensorrt(line: str) -> None:
    assert classify(line)[0].finding_id == "tensorrt-incomplete"


def test_a_tensorrt_part_the_kernel_refused_to_map_is_not_a_missing_part() -> None:
    # TNTwise/REAL-Video-Enhancer#85: the file is there; the kernel refused its executable stack
    line = ("ERROR: [Torch-TensorRT TorchScript Conversion Context] - createInferBuilder: Error Code 6: API Usage Error "
            "(Unable to load library: libnvinfer_builder_resource.so.10.7.0: libnvinfer_builder_resource.so.10.7.0: "
            "cannot enable executable stack as shared object requires: Invalid argument)")
    assert "tensorrt-incomplete" not in [m.finding_id for m in classify(line)]


def test_conda_forges_cpu_build_of_onnxruntime_is_read() -> None:
    # a `conda list` kept in a public README (found by code search): conda-forge's build string names the variant
    line = "onnxruntime               1.16.3          py311h76957bc_0_cpu    conda-forge"
    first = classify(line)[0]
    assert first.finding_id == "ort-cpu-only"
    assert "onnxruntime=*=*cuda*" in first.fix


def test_the_cuda_a_build_is_built_against_is_not_the_machines() -> None:
    # a public write-up (found by code search): jaxlib's build CUDA against the CUDA the base image runs
    line = ("has.** `jaxlib 0.4.25` — confirmed intact through every CPU round — was built against CUDA 11.8; the")
    assert not any(fact.startswith("cuda.") for fact, _ in _facts(line))


def test_an_issue_templates_unticked_options_say_nothing() -> None:
    # C0untFloyd/roop-unleashed#457: the template's options, only one of each ticked
    assert normalise_line("- [ ] Linux in WSL") == ""
    assert normalise_line("- [+] Windows ") != ""


@pytest.mark.parametrize(("line", "said"), [
    # C0untFloyd/roop-unleashed#586
    ("I do not have an nvidia card (I have an Intel(R) HD graphics 530) so I am trying to run roop with CPU but I keep "
     "seeing this error:", True),
    ("- [+] Intel", True),  # C0untFloyd/roop-unleashed#457, the answer to "Are you using a GPU?"
    ("- [ OK] NVIDIA", False),  # C0untFloyd/roop-unleashed#321: NVIDIA ticked
])
def test_a_machine_without_an_nvidia_gpu_is_read(line: str, said: bool) -> None:
    assert any(fact == "gpu.not_nvidia" for fact, _ in _facts(line)) is said


def test_error_35_on_a_machine_without_an_nvidia_gpu_is_no_driver() -> None:
    # C0untFloyd/roop-unleashed#457: "Cuda provider is for Nvidia cards. You need to install and select openvino
    # provider for intel cards."
    text = ("D:\\a\\_work\\1\\s\\onnxruntime\\core\\providers\\cuda\\cuda_call.cc:121 onnxruntime::CudaCall "
            "D:\\a\\_work\\1\\s\\onnxruntime\\core\\providers\\cuda\\cuda_call.cc:114 onnxruntime::CudaCall CUDA failure "
            "35: CUDA driver version is insufficient for CUDA runtime version ; GPU=1167449144 ; "
            "hostname=LAPTOP-GURTBS7E ; file=D:\\a\\_work\\1\\s\\onnxruntime\\core\\providers\\cuda\\"
            "cuda_execution_provider.cc ; line=236 ; expr=cudaSetDevice(info_.device_id);\n\n"
            "Are you using a GPU?\n- [ ] No. CPU FTW\n- [ ] NVIDIA\n- [ ] AMD\n- [+] Intel\n- [ ] Mac\n")
    first = classify(text)[0]
    assert first.finding_id == "driver-missing"
    assert "OpenVINO" in first.fix

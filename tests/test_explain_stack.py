"""Fixes for the stack in the text: the binding and OS a pasted text shows, and no Python advice elsewhere.

The corpus records each text's binding and OS from its thread; the detector reads them from the text
alone, so it may say "unknown" but must not name another binding (three texts are the exception, named
below with the reason). A text whose binding is not Python gets no Python-only advice (pip, the hook,
preload_dlls) unless the text does not show its binding, and then that advice is labelled "Python:".
"""

from __future__ import annotations

import re

import pytest

from ortdoctor.diagnose.classify import classify, classify_with_stack
from ortdoctor.diagnose.textlines import iter_lines
from tests.support.explain_corpus import CorpusEntry, load_corpus

ENTRIES = load_corpus()
NON_PYTHON = [e for e in ENTRIES if e.binding in ("java", "csharp", "rust", "c", "cpp")]
_PYTHON_ONLY = re.compile(r"\bpip3? install\b|import ortdoctor\.hook|preload_dlls|ortdoctor preload|-m pip\b")
# The text of 128 is the user's `pip install onnxruntime-gpu` (a Rust user checking PyPI); the text of 141
# is the title naming the Microsoft.ML.OnnxRuntime.GPU NuGet package (the thread's program is C++); 194 says
# "installed from: NuGet" and nothing else of its language (the thread's program is C++ too).
_READ_OTHERWISE = {"128-rust-ort-aarch64-gb10-no-gpu-wheel": "python",
                   "141-ort-cpp-cuda-memoryinfo-on-host-buffer": "csharp",
                   "194-ort-1-8-0-nuget-win-providers-shared-error-code-126": "csharp"}


def _stack(entry: CorpusEntry) -> tuple[str, str]:
    _, stack = classify_with_stack(iter_lines(entry.text))
    return stack.binding, stack.os


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_the_binding_read_from_the_text_is_never_another_one(entry: CorpusEntry) -> None:
    binding, os_name = _stack(entry)
    want = "cpp" if entry.binding in ("c", "cpp") else entry.binding
    assert binding in (want, "unknown", _READ_OTHERWISE.get(entry.name))
    assert os_name in (entry.os, "unknown") or (entry.os == "wsl" and os_name == "linux")


def test_most_non_python_texts_show_their_binding() -> None:
    shown = [e.name for e in NON_PYTHON if _stack(e)[0] not in ("unknown", "python")]
    assert len(shown) >= len(NON_PYTHON) // 2, shown


@pytest.mark.parametrize("entry", NON_PYTHON, ids=[e.name for e in NON_PYTHON])
def test_no_python_advice_for_a_non_python_stack(entry: CorpusEntry) -> None:
    matches, stack = classify_with_stack(iter_lines(entry.text))
    for m in matches:
        if stack.known and not stack.python:
            assert not _PYTHON_ONLY.search(m.fix), (m.finding_id, m.fix)
        else:  # the text does not show its binding: Python's way only after a "Python:" label
            unlabelled = re.split(r"\(?Python: ", m.fix)[0]
            assert not _PYTHON_ONLY.search(unlabelled), (m.finding_id, m.fix)


def test_java_csharp_rust_and_cpp_get_their_own_equivalents() -> None:
    by_name = {e.name[:3]: e for e in ENTRIES}
    java = classify(by_name["075"].text)[0]
    assert "com.microsoft.onnxruntime:onnxruntime_gpu" in java.fix
    assert "PATH" in java.fix
    csharp = classify(by_name["079"].text)[0]
    assert "Microsoft.ML.OnnxRuntime.Gpu" in csharp.fix
    csharp_126 = classify(by_name["169"].text)[0]
    assert "Microsoft.ML.OnnxRuntime.Gpu NuGet package does not ship CUDA" in csharp_126.fix
    assert "bin folders on PATH" in csharp_126.fix
    rust = classify(by_name["081"].text)[0]
    assert "cuda feature" in rust.fix
    assert "download-binaries" in rust.fix
    assert "load-dynamic" in rust.fix
    rust_missing = classify(by_name["070"].text)[0]
    assert "ort crate" in rust_missing.fix
    cpp = classify(by_name["049"].text)[0]
    assert "ldconfig" in cpp.fix
    assert "release archives" in cpp.fix
    java_linux = classify(by_name["074"].text)[0]
    assert "onnxruntime_gpu jar" in java_linux.fix
    assert "ldconfig" in java_linux.fix


def test_the_os_decides_path_or_library_path() -> None:
    windows = classify(next(e.text for e in ENTRIES if e.name.startswith("014-")))[0]
    linux = classify(next(e.text for e in ENTRIES if e.name.startswith("113-")))[0]
    assert "PATH" in windows.fix
    assert "LD_LIBRARY_PATH" not in windows.fix
    assert "LD_LIBRARY_PATH" in linux.fix or "ldconfig" in linux.fix


def test_the_environment_is_not_applied_to_a_text_from_another_stack() -> None:
    # this machine's onnxruntime (CUDA 13 here) says nothing about a C# program's build on Windows
    text = next(e.text for e in ENTRIES if e.name.startswith("077-"))
    matches, stack = classify_with_stack(iter_lines(text), cuda_major=13, cudnn_major=9, from_environment=True)
    assert stack.binding == "csharp"
    assert matches[0].finding_id == "cuda-lib-missing"
    python = "Traceback (most recent call last):\nImportError: libcudnn.so.8: cannot open shared object file"
    matches, _ = classify_with_stack(iter_lines(python), cuda_major=13, cudnn_major=9, from_environment=True)
    assert matches[0].finding_id == "cudnn-major-mismatch"


@pytest.mark.parametrize("line", [
    # NVIDIA/TensorRT#800: a TensorRT C++ sample's own result line
    "&&&& FAILED TensorRT.sample_onnx_mnist # E:\\TensorRT-7.1.3.4.Windows10.x86_64.cuda-11.0.cudnn8.0\\TensorRT-7.1.3.4"
    "\\samples\\sampleOnnxMNIST\\\\..\\..\\bin\\sample_onnx_mnist.exe",
    # linghu8812/tensorrt_inference#155: glibc's assert() in the program's own C++ source
    "tensorrt_inference: /home/thuong/source/tensorrt_inference/code/src/model.cpp:46: void Model::OnnxToTRTModel(): "
    "Assertion `engine' failed.",
])
def test_cpp_programs_are_read_from_their_own_lines(line: str) -> None:
    _, stack = classify_with_stack(iter_lines(line))
    assert stack.binding == "cpp"

"""The finding classes `explain` gained from the real-text corpus, each backed by its real texts.

Every id below was proposed by ``tests/data/explain_corpus/NEW_IDS.md`` and is now in the catalog; the
texts that established it are the corpus entries that expect it. Beside them: the behaviours the
issue behind the corpus asked for (the root cause before its consequences, another CUDA major told
apart by the build the text names, one id listed once, no error code the text does not have).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from ortdoctor.core.catalog import CATALOG
from ortdoctor.decide.matrix.load import load_matrix
from ortdoctor.diagnose import classify as classify_module
from ortdoctor.diagnose.classify import classify, finding_ids
from tests.support.explain_corpus import CORPUS_DIR, load_corpus

NEW_IDS = sorted(set(re.findall(r"^### `([a-z0-9-]+)`", (CORPUS_DIR / "NEW_IDS.md").read_text(encoding="utf-8"),
                                flags=re.MULTILINE)) - {"gpu-arch-no-kernel", "tensorrt-lib-missing"})
ENTRIES = load_corpus()
ERRORS = Path(__file__).parent / "data" / "errors"

# Known misses of the corpus (see its README): texts that say less than their thread established
# (219 holds its versions but not its error line, which is in the thread's title).
KNOWN_MISSES = {"141-ort-cpp-cuda-memoryinfo-on-host-buffer", "068-ort-cuda-graph-arena-capture-bug",
                "219-ufold-torch-1-4-cuda117-cudnn-execution-failed"}


def test_every_proposed_class_is_in_the_catalog_with_real_threads() -> None:
    for fid in NEW_IDS:
        entry = CATALOG[fid]
        assert entry.produced_by == "explain"
        assert entry.docs, fid
        assert all(d.startswith("https://") for d in entry.docs), fid
        assert entry.cause, fid
        assert entry.evidence, fid
        assert entry.fix, fid


def test_the_two_requested_duplicates_map_to_the_existing_ids() -> None:
    # NEW_IDS.md asked for gpu-arch-no-kernel and tensorrt-lib-missing; the catalog already had them.
    assert "gpu-arch-no-kernel" not in CATALOG
    assert "tensorrt-lib-missing" not in CATALOG
    assert finding_ids("CUDA error cudaErrorNoKernelImageForDevice:no kernel image is available for execution "
                       "on the device") == ["gpu-arch-unsupported"]


@pytest.mark.parametrize("fid", NEW_IDS)
def test_each_new_class_is_given_for_its_real_texts(fid: str) -> None:
    texts = [e for e in ENTRIES if e.expected_id == fid]
    assert texts, f"no corpus text expects {fid}"
    recognised = [e.name for e in texts if finding_ids(e.text)[:1] == [fid]]
    missed = {e.name for e in texts} - set(recognised)
    assert missed <= KNOWN_MISSES, missed
    # the issue asked for three real texts per class; the corpus README names the classes short of them
    assert len(recognised) >= min(3, len(texts) - len(missed))


def test_cuda_path_set_is_recognised_in_both_spellings() -> None:
    both = [e.text for e in ENTRIES if e.expected_id == "cuda-path-set-not-loaded"]
    assert any("wasn't" in t for t in both)
    assert any("wasnt" in t for t in both)
    assert all(finding_ids(t)[0] == "cuda-path-set-not-loaded" for t in both)


def test_a_missing_library_outranks_the_fallback_lines_after_it() -> None:
    text = next(e.text for e in ENTRIES if e.name.startswith("080-"))  # 126, then "Failed to create ..."
    ids = finding_ids(text)
    assert ids[0] == "cuda-lib-missing"
    assert ids[-1] == "cuda-ep-fell-back-to-cpu"
    assert classify(text)[-1].consequence


def test_a_tensorrt_banner_with_cuda_asked_for_is_not_a_cuda_failure() -> None:
    text = next(e.text for e in ENTRIES if e.name.startswith("150-"))
    assert finding_ids(text) == ["tensorrt-ep-fell-back"]
    # a missing libnvinfer named in the text stays the TensorRT cause
    assert finding_ids(next(e.text for e in ENTRIES if e.name.startswith("161-")))[0] == "tensorrt-unavailable"


def test_the_build_the_text_names_decides_a_major_mismatch() -> None:
    line = ("Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.12: cannot open "
            "shared object file: No such file or directory")
    assert finding_ids(line) == ["cuda-lib-missing"]  # CUDA 12 is a current major: nothing says it is wrong
    require = "Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 13.*."
    assert finding_ids(line + "\n" + require)[0] == "cuda-major-mismatch"
    assert finding_ids(require + "\n" + line)[0] == "cuda-major-mismatch"  # a later or earlier line alike
    # the onnxruntime version in the text, through the matrix: 1.16.3 is built for CUDA 11 only
    assert finding_ids("onnxruntime-gpu==1.16.3\n" + line)[0] == "cuda-major-mismatch"
    # 1.18.1 has a CUDA 12 feed build: a CUDA 12 library is that build's own
    assert finding_ids("onnxruntime-gpu==1.18.1\n" + line)[0] == "cuda-lib-missing"


def test_genai_cuda_interface_is_a_sibling_mismatch() -> None:
    text = next(e.text for e in ENTRIES if e.name.startswith("069-"))
    assert "Cuda interface not available" in text
    assert "libcublasLt.so.12" in text
    assert finding_ids(text) == ["sibling-cuda-major-mismatch"]


def test_a_device_ordinal_of_zero_is_not_blamed_on_the_id() -> None:
    text = next(e.text for e in ENTRIES if e.name.startswith("085-"))
    first = classify(text)[0]
    assert first.finding_id == "invalid-device-ordinal"
    assert "GPU=0" in text
    assert "lower" not in first.fix
    assert "device 0" in first.what


def test_no_cuda_error_code_is_invented() -> None:
    text = next(e.text for e in ENTRIES if e.name.startswith("067-"))  # a BFC arena failure, no CUDA error 2
    first = classify(text)[0]
    assert first.finding_id == "gpu-out-of-memory"
    assert "error 2" not in first.what
    assert "cuda_error" not in first.details


def test_one_id_is_listed_once_for_several_lines() -> None:
    text = next(e.text for e in ENTRIES if e.name.startswith("156-"))  # Shape, Squeeze, Unsqueeze, Shape, ...
    matches = classify(text)
    assert [m.finding_id for m in matches] == ["op-kernel-missing"]
    assert "Squeeze" in matches[0].what


def test_numpy_abi_fix_pins_numpy_for_the_running_python() -> None:
    first = classify(next(e.text for e in ENTRIES if e.name.startswith("018-")))[0]
    assert first.finding_id == "numpy-abi-mismatch"
    assert 'python -m pip install "numpy<2"' in first.fix
    assert "numpy<2" in first.packages


def test_glibcxx_and_glibc_are_one_class() -> None:
    for name in ("021-", "022-", "023-", "024-"):
        assert finding_ids(next(e.text for e in ENTRIES if e.name.startswith(name)))[0] == "glibcxx-too-old"


# Real text: microsoft/onnxruntime#26312 ("CUDA failure 700: an illegal memory access was encountered",
# onnxruntime-win-x64-gpu-1.23.0, a C++ program creating its input with Ort::MemoryInfo("Cuda", ...)).
_ILLEGAL_ADDRESS = "CUDA failure 700: an illegal memory access was encountered"


def test_an_illegal_address_is_host_memory_bound_as_cuda_memory() -> None:
    first = classify(_ILLEGAL_ADDRESS)[0]
    assert first.finding_id == "iobinding-host-memory"
    assert "CUDA_LAUNCH_BLOCKING=1" in first.fix
    python = classify("Traceback (most recent call last):\n" + _ILLEGAL_ADDRESS)[0]
    assert "use_io_binding=False" in python.fix
    assert "cuda" in python.fix
    cpp = classify("terminate called after throwing an instance of 'Ort::Exception'\n  what():  "
                   + _ILLEGAL_ADDRESS)[0]
    assert "MemoryInfo" in cpp.fix
    assert "use_io_binding" not in cpp.fix


def test_no_kernel_image_names_the_release_architectures_when_the_matrix_has_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    text = next(e.text for e in ENTRIES if e.name.startswith("116-"))  # an RTX 5090 without sm_120 kernels
    matrix = load_matrix()
    releases = tuple(dataclasses.replace(r, archs=("sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_120a"))
                     if r.line == "1.31" else dataclasses.replace(r, archs=("sm_75", "sm_80", "sm_86", "sm_89", "sm_90"))
                     if r.line == "1.23" else r for r in matrix.releases)
    monkeypatch.setattr(classify_module, "_matrix", lambda: dataclasses.replace(matrix, releases=releases))
    with_gpu = "NVIDIA GeForce RTX 5090 Laptop GPU\n" + text
    first = classify(with_gpu, ort_version="1.23.2")[0]
    assert first.finding_id == "gpu-arch-unsupported"
    assert "sm_90" in first.what
    assert "sm_120 is not among them" in first.what
    newer = classify(with_gpu, ort_version="1.31.1")[0]
    assert "sm_120a" in newer.what
    assert "sm_120 is among them" in newer.what
    # the GPU without a version: the lines whose wheel carries it
    carrying = [r.line for r in releases if "sm_120a" in r.archs]  # newest first, 1.31 among them
    assert f"carry sm_120: {carrying[0]}," in classify(with_gpu)[0].what
    assert "1.31" in carrying
    # without archs in the matrix, nothing is claimed about the wheel
    bare = dataclasses.replace(matrix, releases=tuple(dataclasses.replace(r, archs=()) for r in matrix.releases))
    monkeypatch.setattr(classify_module, "_matrix", lambda: bare)
    assert "carries" not in classify(with_gpu, ort_version="1.23.2")[0].what


def test_every_id_explain_gives_is_documented() -> None:
    for entry in ENTRIES:
        for fid in finding_ids(entry.text):
            assert fid in CATALOG, fid


def test_every_cuda_error_code_observed_has_a_meaning() -> None:
    from ortdoctor.diagnose import text_meaning, text_observe

    assert set(text_meaning.BY_CODE) == text_observe.KNOWN_CODES

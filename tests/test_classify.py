"""The classifier: every corpus text (real ORT output and the research's quotes) maps to its finding."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ortdoctor.core.catalog import CATALOG
from ortdoctor.diagnose.classify import classify, finding_ids

CORPUS = sorted((Path(__file__).parent / "data" / "errors").glob("*.txt"))


def load_case(path: Path) -> tuple[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    expect = next(ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("# expect:"))
    return expect, "\n".join(ln for ln in lines if not ln.startswith("# ")) + "\n"


def test_the_corpus_is_there() -> None:
    assert len(CORPUS) >= 30


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus_text_maps_to_its_finding_first(path: Path) -> None:
    expect, text = load_case(path)
    ids = finding_ids(text)
    assert ids, f"nothing recognised in {path.name}"
    assert ids[0] == expect


def test_every_id_the_classifier_gives_is_documented() -> None:
    from ortdoctor.diagnose.classify import LOCAL_DOCS

    for path in CORPUS:
        for fid in finding_ids(load_case(path)[1]):
            assert fid in CATALOG or fid in LOCAL_DOCS, fid


def test_real_driver_message_keeps_the_evidence_line() -> None:
    _, text = load_case(next(p for p in CORPUS if p.stem == "real_ort_1_31_1_no_driver"))
    first = classify(text)[0]
    assert first.details["soname"] == "libcuda.so.1"
    assert "Failed to load library" in first.evidence
    # ORT's own "Require cuDNN 9.* and CUDA 13.*" line is read for the build's majors.
    consequence = classify(text)[-1]
    assert consequence.consequence
    assert consequence.details == {"cudnn_major": "9", "cuda_major": "13"}


def test_soname_of_another_major_is_a_mismatch_only_when_the_build_is_known() -> None:
    line = "Failed to load library libonnxruntime_providers_cuda.so with error: libcudart.so.12: cannot open shared object file"
    assert finding_ids(line) == ["cuda-lib-missing"]
    assert finding_ids(line, cuda_major=13) == ["cuda-major-mismatch"]
    assert finding_ids(line, cuda_major=12) == ["cuda-lib-missing"]
    cudnn = "with error: libcudnn.so.8: cannot open shared object file"
    assert finding_ids(cudnn, cudnn_major=9) == ["cudnn-major-mismatch"]


def test_cufft_soname_major_is_one_below_cuda() -> None:
    line = "with error: libcufft.so.11: cannot open shared object file"
    assert finding_ids(line, cuda_major=12) == ["cuda-lib-missing"]
    assert finding_ids(line, cuda_major=13) == ["cuda-major-mismatch"]


def test_import_error_on_1_27_0_is_the_known_bad_release() -> None:
    text = "ImportError: libcudart.so.13: cannot open shared object file: No such file or directory"
    assert finding_ids(text, ort_version="1.27.0") == ["ort-known-bad-release"]


def test_line_numbers_do_not_matter() -> None:
    a = "[E:onnxruntime:Default, provider_bridge_ort.cc:1778 operator()] Failed to load library x.so with error: libcuda.so.1: cannot open shared object file"
    b = a.replace("1778", "2458")
    assert finding_ids(a) == finding_ids(b) == ["driver-missing"]


def test_colour_codes_are_ignored() -> None:
    text = "\x1b[1;31mCUDA failure 100: no CUDA-capable device is detected ; GPU=0\x1b[m"
    assert finding_ids(text) == ["no-gpu-visible"]


def test_tensorrt_fallback_to_cuda_is_not_a_cpu_fallback() -> None:
    text = ("EP Error ... libnvinfer.so.10: cannot open shared object file when using ['TensorrtExecutionProvider'] "
            "Falling back to ['CUDAExecutionProvider', 'CPUExecutionProvider'] and retrying.")
    assert finding_ids(text) == ["tensorrt-unavailable"]


@pytest.mark.parametrize("text", ["", "all good", "CUDA failure 12345", "x" * 100_000, "\x00\xff", "cuda error"])
def test_unremarkable_text_matches_nothing(text: str) -> None:
    assert classify(text) == []


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=3000))
def test_classify_never_raises(text: str) -> None:
    for m in classify(text):
        assert m.finding_id
        assert m.evidence is not None


_FRAGMENTS = [
    "cannot open shared object file", "libcudnn.so.", "libcuda.so", ".so.", ": ", "CUDA failure ", "Require cuDNN ",
    "9.* and CUDA ", "13.*", "which is missing", ".dll", "error 126", "Asked to use CUDAExecutionProvider as an "
    "ONNX Runtime execution provider, but the available execution providers are [", "]", "\n", "lib", "999",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS) | st.text(max_size=20), max_size=40))
def test_classify_never_raises_on_near_misses(parts: list[str]) -> None:
    classify("".join(parts), cuda_major=13, cudnn_major=9, ort_version="1.27.0")


# --------------------------------------------------------------------------------------------------
# Every line is read
# --------------------------------------------------------------------------------------------------
_CAUSE = ("Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot open shared "
          "object file: No such file or directory")


def test_a_cause_after_thirty_thousand_lines_is_found() -> None:
    info = "2024-08-13 13:20:05.140879087 [I:onnxruntime:, inference_session.cc:1234 Initialize] loading\n"
    assert finding_ids(info * 30_000 + _CAUSE) == ["cuda-lib-missing"]


def test_a_cause_inside_a_megabyte_long_line_is_found() -> None:
    assert finding_ids("x" * 500_000 + " " + _CAUSE + " " + "y" * 500_000) == ["cuda-lib-missing"]


def test_lines_are_streamed_from_any_iterable() -> None:
    from ortdoctor.diagnose.classify import classify_lines

    def lines() -> Iterator[str]:
        for _ in range(25_000):
            yield "progress 42%"
        yield _CAUSE

    assert [m.finding_id for m in classify_lines(lines())] == ["cuda-lib-missing"]


def test_a_message_a_terminal_wrapped_is_one_message() -> None:
    from tests.support.explain_corpus import load_corpus

    # entry 045 pasted "... Failed to create" at the end of one line and "CUDAExecutionProvider." on the next
    text = next(e.text for e in load_corpus() if e.name.startswith("045-"))
    assert "Failed to create \nCUDAExecutionProvider" in text
    assert "cuda-ep-fell-back-to-cpu" in finding_ids(text)


def test_utf16_text_shown_as_spaced_characters_is_read() -> None:
    from tests.support.explain_corpus import load_corpus

    text = next(e.text for e in load_corpus() if e.name.startswith("142-"))  # "L o a d L i b r a r y ..."
    assert "L o a d L i b r a r y" in text
    assert finding_ids(text) == ["cuda-lib-missing"]

"""Every package and version `ortdoctor explain` prints exists on PyPI.

The fixes name packages through :mod:`ortdoctor.decide.packages` (from the matrix), never by hand; this
test checks the result. It collects every package spec explain prints over both corpora of real texts
(under several build contexts) and over the catalog texts `explain ID` prints, and checks each against
the matrix's package table (what PyPI has; see tests/support/pypi.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from ortdoctor.core.catalog import CATALOG
from ortdoctor.decide import packages
from ortdoctor.decide.matrix.load import load_matrix
from ortdoctor.diagnose.classify import classify, classify_with_stack
from ortdoctor.diagnose.fixes import pip_specs
from ortdoctor.diagnose.text_evidence import Evidence
from ortdoctor.diagnose.textlines import iter_lines
from tests.support.explain_corpus import load_corpus
from tests.support.pypi import MATRIX, spec_problem

ERRORS = sorted((Path(__file__).parent / "data" / "errors").glob("*.txt"))
CONTEXTS: tuple[dict[str, Any], ...] = ({}, {"cuda_major": 12, "cudnn_major": 9}, {"cuda_major": 13, "cudnn_major": 9},
            {"cuda_major": 11, "cudnn_major": 8}, {"ort_version": "1.16.3"}, {"ort_version": "1.27.0"},
            {"ort_version": "1.31.1"})
# Names a fix may mention without a pip command (a wheel to depend on, a TensorRT wheel).
_NAMED = re.compile(r"\b(nvidia-(?:cuda-runtime|cublas|cufft|curand|cuda-nvrtc|nvjitlink|cudnn)(?:-cu\d+)?"
                    r"|tensorrt-cu\d+)\b")
# Not PyPI packages of the ecosystem: this project itself, and a template a catalog text spells out.
_NOT_CHECKED = {"ortdoctor", "NAME==VERSION"}


def _printed() -> tuple[set[str], set[str]]:
    specs: set[str] = set()
    names: set[str] = set()
    texts = [e.text for e in load_corpus()] + [p.read_text(encoding="utf-8") for p in ERRORS]
    for text in texts:
        for ctx in CONTEXTS:
            for m in classify(text, **ctx):
                assert set(m.packages) == set(pip_specs(m.fix))
                specs.update(m.packages)
                names.update(_NAMED.findall(m.fix))
    for entry in CATALOG.values():
        specs.update(pip_specs(entry.fix))
        names.update(_NAMED.findall(entry.fix))
    return specs - _NOT_CHECKED, names


SPECS, NAMES = _printed()


def test_explain_prints_package_specs_at_all() -> None:
    assert {"numpy<2", "nvidia-cudnn-cu12==9.*", "nvidia-cudnn-cu12==8.*"} <= SPECS


@pytest.mark.parametrize("spec", sorted(SPECS))
def test_every_printed_spec_exists_on_pypi(spec: str) -> None:
    assert spec_problem(spec) is None, spec_problem(spec)


@pytest.mark.parametrize("name", sorted(NAMES))
def test_every_named_wheel_exists_on_pypi(name: str) -> None:
    # a name in prose may be a stub the fix warns against ("nvidia-cublas instead of nvidia-cublas-cu13");
    # what a fix installs is checked above, release by release
    assert name in MATRIX.packages, f"{name} is not a project on PyPI"


def test_wheels_that_do_not_exist_are_never_named() -> None:
    m = load_matrix()
    assert packages.cudnn_wheel(m, 8, 13) is None  # there is no nvidia-cudnn-cu13 8.x
    assert packages.cudnn_wheel(m, 7, 13) is None
    assert packages.wheel_for(m, "cudart", 10) is None  # no CUDA 10 wheels at all
    assert packages.cudnn_wheel(m, 8, 12) == "nvidia-cudnn-cu12"
    assert packages.wheel_for(m, "cublasLt", 13) == "nvidia-cublas"
    assert packages.wheel_for(m, "cublasLt", 12) == "nvidia-cublas-cu12"
    for spec in SPECS:
        assert not re.search(r"nvidia-cudnn-cu13==[0-8]\.|-cu10\b|nvidia-(?!cudnn)[a-z-]+-cu13\b", spec), spec


def test_a_cudnn_7_or_cuda_10_text_gets_no_wheel() -> None:
    cudnn7 = classify("OSError: libcudnn.so.7: cannot open shared object file: No such file or directory")[0]
    cuda10 = classify("OSError: libcublas.so.10: cannot open shared object file: No such file or directory")[0]
    assert cudnn7.packages == ()
    assert cuda10.packages == ()
    assert "cudnn" in cudnn7.fix.lower()
    assert "libcublas.so.10" in cuda10.fix


# -- every printed spec fits the stack the text shows (its Python, platform and CUDA major) -------------
def _fit_problem(spec: str, python: str | None, windows: bool, cuda_majors: set[int]) -> str | None:
    """Why ``spec`` cannot be installed on the evidenced stack, or None."""
    req = Requirement(spec)
    name = canonicalize_name(req.name)
    row = MATRIX.packages.get(name)
    if row is None:
        return None  # counted by test_every_printed_spec_exists_on_pypi
    if row.cuda is not None and cuda_majors and row.cuda not in cuda_majors:
        return f"{spec} is a CUDA {row.cuda} wheel; the text shows CUDA {sorted(cuda_majors)}"
    if name != "onnxruntime-gpu" or python is None:
        return None
    matching = [v for v in row.versions if req.specifier.contains(v, prereleases=False)]
    lines = {r.line: r for r in MATRIX.releases}
    # pip takes the newest release with a wheel for this Python: some release must have one
    fits = [v for v in matching
            if (rel := lines.get(".".join(v.split(".")[:2]))) is None or not rel.python or python in rel.python]
    if not fits:
        return f"no release that {spec} allows has a wheel for Python {python}"
    return None


def _fits_cases() -> list[tuple[str, str]]:
    cases = []
    for entry in load_corpus():
        evidence: list[Evidence] = []
        matches, stack = classify_with_stack(iter_lines(entry.text), evidence=evidence)
        pythons = {e.value for e in evidence if e.fact == "python.version"}
        python = pythons.pop() if len(pythons) == 1 else None
        build = {int(e.value) for e in evidence if e.fact == "ort.cuda_major"}
        installed = {int(e.value.split(".")[0]) for e in evidence if e.fact == "cuda.version"}
        for m in matches:
            for spec in m.packages:
                problem = _fit_problem(spec, python, stack.windows, build | installed if build else set())
                if problem:
                    cases.append((entry.name, f"{m.finding_id}: {problem}"))
    return cases


def test_every_printed_spec_fits_the_evidenced_python_and_cuda_major() -> None:
    # explain's fixes for a text that shows Python 3.9 never pin a release without a 3.9 wheel, and a CUDA
    # wheel printed for a text that shows the build's CUDA major is of that major (or the installed one)
    assert _fits_cases() == []


def test_a_python_39_text_gets_a_pin_its_python_can_install() -> None:
    text = ("  File \"/home/u/.local/lib/python3.9/site-packages/onnxruntime/capi/onnxruntime_inference_collection.py\", "
            "line 419, in _create_inference_session\n"
            "Specified provider 'CUDAExecutionProvider' is not in available provider names.Available providers: "
            "'CPUExecutionProvider'\n"
            "nvcc: NVIDIA (R) Cuda compiler driver, Cuda compilation tools, release 12.4, V12.4.131\n")
    fix = classify(text)[0].fix
    assert "onnxruntime-gpu==1.19.2" in fix or "Python 3.9" in fix, fix
    assert "1.26" not in fix
    assert "1.31" not in fix


def test_a_missing_cuda_library_gets_the_whole_library_set_of_its_major() -> None:
    # corpus 113 (LatentSync): libnvrtc.so.12 could not be opened; the CUDA provider links cuBLAS, cuRAND,
    # cuFFT and the runtime of the same major too, so installing nvidia-cuda-nvrtc-cu12 alone would only
    # move the error to the next library
    entry = next(e for e in load_corpus() if e.name.startswith("113-"))
    first = classify(entry.text)[0]
    assert first.finding_id == "cuda-lib-missing"
    assert {"nvidia-cuda-nvrtc-cu12", "nvidia-cublas-cu12", "nvidia-cuda-runtime-cu12"} <= set(first.packages)

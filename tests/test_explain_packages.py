"""Every package and version `ortdoctor explain` prints exists on PyPI.

The fixes name packages through :mod:`ortdoctor.decide.packages` (from the matrix), never by hand; this
test checks the result. It collects every package spec explain prints over both corpora of real texts
(under several build contexts) and over the catalog texts `explain ID` prints, and checks each against
the matrix's package table (what PyPI has; see tests/support/pypi.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ortdoctor.core.catalog import CATALOG
from ortdoctor.decide import packages
from ortdoctor.decide.matrix.load import load_matrix
from ortdoctor.diagnose.classify import classify
from ortdoctor.diagnose.fixes import pip_specs
from tests.support.explain_corpus import load_corpus
from tests.support.pypi import MATRIX, spec_problem

ERRORS = sorted((Path(__file__).parent / "data" / "errors").glob("*.txt"))
CONTEXTS = ({}, {"cuda_major": 12, "cudnn_major": 9}, {"cuda_major": 13, "cudnn_major": 9},
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
            for m in classify(text, **ctx):  # type: ignore[arg-type]
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

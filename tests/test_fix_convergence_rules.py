"""Rules the fix-convergence grid (tests/convergence/) showed wrong: after a right fix the check is clean.

Each case is the state a printed fix leaves behind in a real venv (scripts/convergence.py, results in
docs/validation.md), rebuilt here from facts so it runs without the wheels.
"""

from __future__ import annotations

from ortdoctor.core.facts import NvidiaWheel
from tests.test_diagnose import SITE, healthy_env, ids, one, run


def test_another_majors_wheels_beside_a_complete_set_are_a_note() -> None:
    """onnxruntime-gpu 1.20.2 after its fix: the CUDA 12 set installed and found, the CUDA 13 wheels
    the user had still there in nvidia/cu13/lib. The build never loads them: nothing to fix."""
    cu12 = NvidiaWheel("nvidia-cublas-cu12", "12.9.3.13", SITE, (f"{SITE}/nvidia/cublas/lib",),
                       ("libcublas.so.12", "libcublasLt.so.12"), 12)
    found = run(healthy_env(nvidia_wheels=(cu12,)))
    f = one(found, "cuda-major-mismatch")
    assert f.severity == "info"
    assert not f.steps
    assert f.fix is None
    assert "unused" in f.detail
    assert "cuda-lib-missing" not in ids(found)

"""Rules the fix-convergence grid (tests/convergence/) showed wrong: after a right fix the check is clean.

Each case is the state a printed fix leaves behind in a real venv (scripts/convergence.py, results in
docs/validation.md), rebuilt here from facts so it runs without the wheels.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from ortdoctor.core.facts import ElfInfo, Environment, NvidiaWheel, OrtDistribution
from ortdoctor.decide.fixes import library_fix
from ortdoctor.decide.matrix.load import load_matrix
from ortdoctor.decide.resolve import resolve
from tests.test_diagnose import SITE, healthy_env, ids, one, ort_gpu, run, system_with_path

MATRIX = load_matrix()


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


def _old_build(version: str, needed: tuple[str, ...]) -> Environment:
    """An onnxruntime-gpu wheel from before 1.21: no build info, the majors in its provider's DT_NEEDED."""
    pkg = f"{SITE}/onnxruntime"
    ort = ort_gpu(version=version, cuda_version=None, cudnn_major=None, package_name=None,
                  distributions=(OrtDistribution("onnxruntime-gpu", version, SITE,
                                                 f"{SITE}/onnxruntime_gpu-{version}.dist-info", owns_files_on_disk=True),),
                  cuda_provider=ElfInfo(f"{pkg}/capi/libonnxruntime_providers_cuda.so", "x86_64", 64, needed=needed))
    return healthy_env(ort=ort, system=system_with_path())


@pytest.mark.parametrize(("version", "needed", "other", "wants"), [
    # 1.20.2 (CUDA 12, cuDNN 9) beside the CUDA 11 wheels' cuDNN 8
    ("1.20.2", ("libcublasLt.so.12", "libcudart.so.12", "libcudnn.so.9"), "nvidia-cudnn-cu11", "nvidia-cudnn-cu12==9.*"),
    # 1.18.0 (CUDA 11.8, cuDNN 8) beside nvidia-cudnn-cu12 9
    ("1.18.0", ("libcublasLt.so.11", "libcudart.so.11.0", "libcudnn.so.8"), "nvidia-cudnn-cu12", "nvidia-cudnn-cu11==8.*"),
])
def test_a_fix_that_brings_cudnn_removes_another_cuda_majors_cudnn_first(
        version: str, needed: tuple[str, ...], other: str, wants: str) -> None:
    """Every cuDNN flavour installs into nvidia/cudnn/lib: left there, the next check finds both flavours
    in one directory (cudnn-major-mismatch) and a second round is needed. Seen in the grid:
    old-1.20-cuda11-wheels, old-1.18-cudnn9-wheels."""
    major = int(other.rsplit("cu", 1)[1])
    cudnn_dir = f"{SITE}/nvidia/cudnn/lib"
    wheel = NvidiaWheel(other, "8.9.6.50" if major == 11 else "9.28.0.42", SITE, (cudnn_dir,),
                        ("libcudnn.so.8",) if major == 11 else ("libcudnn.so.9",), major)
    env = replace(_old_build(version, needed), nvidia_wheels=(wheel,))
    plan = resolve(env, MATRIX, index={})
    steps = library_fix(MATRIX, env, plan, [lp for lp in plan.libraries if lp.chosen is None])
    assert [s.verb for s in steps] == ["uninstall", "install"], steps
    assert other in steps[0].args
    assert wants in steps[1].args

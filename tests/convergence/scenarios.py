"""The broken environments of the convergence grid, each built from the real PyPI wheels.

The old releases (1.16-1.20) are paired with every kind of wrong major their users meet: 1.16-1.18 are
CUDA 11.8 / cuDNN 8 builds on PyPI, 1.19-1.20 CUDA 12 / cuDNN 9 (compat_matrix.yaml, read from the
wheels). ``ci=True`` marks the scenarios the test suite runs (tests/convergence/test_convergence.py); the
whole grid runs with ``python scripts/convergence.py``. After a scenario's fix, the preload must leave every
library the CUDA provider lists in ``DT_NEEDED`` in the process (1.20's cuDNN sub-libraries included).
"""

from __future__ import annotations

from tests.convergence.harness import Scenario

GPU = "onnxruntime-gpu==1.31.1"
CPU = "onnxruntime==1.31.1"
GPU_FULL = "onnxruntime-gpu[cuda,cudnn]==1.31.1"

# The CUDA 13 wheels as onnxruntime-gpu 1.31.1's [cuda,cudnn] extras ask for them (nvidia-cublas comes
# through nvidia-cudnn-cu13). Not pinned: the cache then holds one CUDA 13 set, the one a fix installing
# "onnxruntime-gpu[cuda,cudnn]==1.31.1" resolves to as well (about 1.3 GB fewer to fetch).
CUDA13 = ("nvidia-cuda-runtime~=13.0", "nvidia-cuda-nvrtc~=13.0", "nvidia-cufft~=12.0", "nvidia-curand~=10.0",
          "nvidia-cudnn-cu13~=9.0")
# The newest CUDA 12 wheels (what a fix naming the -cu12 wheels installs today), pinned.
CUDA12 = ("nvidia-cuda-runtime-cu12==12.9.79", "nvidia-cuda-nvrtc-cu12==12.9.86", "nvidia-cublas-cu12==12.9.3.13",
          "nvidia-cufft-cu12==11.4.1.4", "nvidia-curand-cu12==10.3.10.19", "nvidia-cudnn-cu12==9.28.0.42")
CUDA12_CUDNN8 = (*CUDA12[:-1], "nvidia-cudnn-cu12==8.9.7.29")
CUDA11 = ("nvidia-cuda-runtime-cu11==11.8.89", "nvidia-cublas-cu11==11.11.3.6", "nvidia-cufft-cu11==10.9.0.58",
          "nvidia-curand-cu11==10.3.0.86", "nvidia-cudnn-cu11==8.9.6.50")
CUDA11_CUDNN9 = (*CUDA11[:-1], "nvidia-cudnn-cu11==9.10.2.21")

# What a right fix installs (fetched ahead so a rerun downloads nothing; the fix itself decides).
FIX_CUDA13 = (GPU_FULL,)
FIX_CUDA12 = ("nvidia-cuda-runtime-cu12", "nvidia-cublas-cu12", "nvidia-cufft-cu12", "nvidia-curand-cu12",
              "nvidia-cudnn-cu12==9.*")
FIX_CUDA11 = ("nvidia-cuda-runtime-cu11", "nvidia-cublas-cu11", "nvidia-cufft-cu11", "nvidia-curand-cu11",
              "nvidia-cudnn-cu11==8.*")

SCENARIOS: tuple[Scenario, ...] = (
    # ---- old builds (no build_and_package_info.py), each with a wrong major
    # (the check after the fix runs the smoke session: 1.20 without a driver ends in driver-missing alone)
    Scenario("old-1.20-cuda13-wheels", "onnxruntime-gpu 1.20.2 (CUDA 12, cuDNN 9) with the CUDA 13 wheels",
             (("onnxruntime-gpu==1.20.2",), CUDA13), ("cuda-major-mismatch",), fix_needs=(FIX_CUDA12,), ci=True,
             smoke=True),
    Scenario("old-1.20-alone", "onnxruntime-gpu 1.20.2 (CUDA 12, cuDNN 9) without any NVIDIA wheel",
             (("onnxruntime-gpu==1.20.2",),), ("cuda-lib-missing",), fix_needs=(FIX_CUDA12,)),
    Scenario("old-1.20-cuda11-wheels", "onnxruntime-gpu 1.20.2 (CUDA 12, cuDNN 9) with the CUDA 11 wheels",
             (("onnxruntime-gpu==1.20.2",), CUDA11), ("cuda-major-mismatch",), fix_needs=(FIX_CUDA12,)),
    Scenario("old-1.19-cudnn8-wheels", "onnxruntime-gpu 1.19.2 (CUDA 12, cuDNN 9) with CUDA 12 wheels but cuDNN 8",
             (("onnxruntime-gpu==1.19.2",), CUDA12_CUDNN8), ("cudnn-major-mismatch",), fix_needs=(FIX_CUDA12,)),
    Scenario("old-1.19-cuda11-wheels", "onnxruntime-gpu 1.19.2 (CUDA 12, cuDNN 9) with the CUDA 11 wheels",
             (("onnxruntime-gpu==1.19.2",), CUDA11), ("cuda-major-mismatch",), fix_needs=(FIX_CUDA12,)),
    Scenario("old-1.18-cudnn9-wheels", "onnxruntime-gpu 1.18.0 (CUDA 11.8, cuDNN 8) with nvidia-cudnn-cu12 9 "
             "(and the cuBLAS 12 it pulls in)", (("onnxruntime-gpu==1.18.0",), ("nvidia-cudnn-cu12==9.28.0.42",)),
             ("cudnn-major-mismatch",), fix_needs=(FIX_CUDA11,)),
    Scenario("old-1.18-cuda11-cudnn9", "onnxruntime-gpu 1.18.0 (CUDA 11.8, cuDNN 8) with CUDA 11 wheels but cuDNN 9",
             (("onnxruntime-gpu==1.18.0",), CUDA11_CUDNN9), ("cudnn-major-mismatch",), fix_needs=(FIX_CUDA11,)),
    Scenario("old-1.17-cuda13-wheels", "onnxruntime-gpu 1.17.1 (CUDA 11.8, cuDNN 8) with the CUDA 13 wheels",
             (("onnxruntime-gpu==1.17.1",), CUDA13), ("cuda-major-mismatch",), fix_needs=(FIX_CUDA11,)),
    Scenario("old-1.16-cuda12-wheels", "onnxruntime-gpu 1.16.3 (CUDA 11.8, cuDNN 8) with the CUDA 12 wheels",
             (("onnxruntime-gpu==1.16.3",), CUDA12), ("cuda-major-mismatch",), fix_needs=(FIX_CUDA11,)),
    # ---- the current build
    Scenario("cuda13-build-cu12-wheels", "onnxruntime-gpu 1.31.1 (CUDA 13) with only the -cu12 wheels",
             ((GPU,), CUDA12), ("cuda-major-mismatch", "cudnn-major-mismatch"), fix_needs=(FIX_CUDA13,), ci=True),
    Scenario("gpu-without-extras", "onnxruntime-gpu 1.31.1 without [cuda,cudnn]: no CUDA libraries at all",
             ((GPU,),), ("cuda-lib-missing",), fix_needs=(FIX_CUDA13,)),
    Scenario("cpu-only", "the CPU onnxruntime 1.31.1 alone", ((CPU,),), ("ort-cpu-only",), fix_needs=(FIX_CUDA13,)),
    Scenario("both-packages", "onnxruntime 1.31.1 installed over onnxruntime-gpu 1.31.1 (its files win)",
             ((GPU,), (CPU,)), ("ort-multiple-packages",), fix_needs=(FIX_CUDA13,), ci=True),
    Scenario("no-pip-cpu-only", "a venv made with --without-pip holding the CPU onnxruntime (and ortdoctor, "
             "both installed with another pip's --python)", ((CPU,),), ("ort-cpu-only",), without_pip=True,
             fix_needs=(FIX_CUDA13,), ci=True),
    Scenario("truncated-curand", "onnxruntime-gpu[cuda,cudnn] 1.31.1 with libcurand.so.10 cut to 4 KiB",
             ((GPU, *CUDA13),), ("lib-file-damaged",), truncate="nvidia/cu13/lib/libcurand.so.10"),
    # ---- layouts: where each copy is installed decides which installer removes it (printed commands)
    Scenario("target-dir-quoted", "onnxruntime-gpu[cuda,cudnn] 1.31.1 in the venv; the CPU onnxruntime 1.31.1 in a "
             "pip install --target directory on PYTHONPATH whose path holds a space, a quote and $(...), beside "
             "a directory the first word of that path names", ((GPU, *CUDA13),), ("ort-multiple-packages",),
             target_installs=("--no-deps", CPU), target_dir="proj/my dir $(touch INJECTED) it's/tgt", ci=True),
    Scenario("user-site-shadowed", "a venv with system site packages: onnxruntime-gpu 1.31.1 (no extras) in the "
             "venv, the CPU onnxruntime 1.31.1 in the user site (pip install --user), shadowed",
             ((GPU,),), ("ort-multiple-packages", "cuda-lib-missing"), system_site_packages=True,
             user_installs=("--no-deps", CPU), fix_needs=(FIX_CUDA13,)),
    Scenario("uv-venv-both-packages", "a venv made by uv venv (no pip), onnxruntime installed over onnxruntime-gpu "
             "1.31.1 with uv pip; uv in ~/.local/bin, not on PATH", ((GPU,), (CPU,)), ("ort-multiple-packages",),
             uv_venv=True, fix_needs=(FIX_CUDA13,)),
    Scenario("poetry-venv-both-packages", "a poetry project (poetry 2.5.1) depending on onnxruntime-gpu and "
             "onnxruntime 1.31.1, both installed by poetry install into its in-project .venv",
             ((GPU, CPU),), ("ort-multiple-packages",), poetry=True, fix_needs=(FIX_CUDA13,)),
    # an activated venv that is not the broken one (ortdoctor in both): the paste must fix the inspected
    # venv and leave the activated one's site-packages as it was
    Scenario("activated-other-check-python", "onnxruntime installed over onnxruntime-gpu 1.31.1 in a venv; "
             "another venv activated (VIRTUAL_ENV, its bin/ first on PATH), whose ortdoctor checks the broken one "
             "with --python", ((GPU,), (CPU,)), ("ort-multiple-packages",), activated="python",
             fix_needs=(FIX_CUDA13,)),
    Scenario("activated-other-own-check", "onnxruntime installed over onnxruntime-gpu 1.31.1 in a venv "
             "whose own ortdoctor checks it while another venv is activated (VIRTUAL_ENV, its bin/ first on PATH)",
             ((GPU,), (CPU,)), ("virtual-env-not-inspected", "ort-multiple-packages"), activated="self",
             fix_needs=(FIX_CUDA13,)),
    Scenario("activated-broken-tool-check", "onnxruntime installed over onnxruntime-gpu 1.31.1 in the activated "
             "venv (VIRTUAL_ENV, its bin/ first on PATH); ortdoctor run from a venv of its own (as pipx installs it)",
             ((GPU,), (CPU,)), ("virtual-env-not-inspected",), activated="tool", fix_needs=(FIX_CUDA13,)),
    # ---- diagnosis: the cause, not the symptom. No driver on this machine: after the package fix the
    # smoke session runs and must end in driver-missing alone, on every release (1.18 and 1.22 crash in
    # their CUDA provider's initialisers without a driver, 1.17 reports CUDA error 35). NumPy 1 where the
    # build needs it, so the scenario tests the driver's verdict, not the NumPy fix.
    # ---- diagnosis: the layout first. site-packages unreadable to the user who checks: named as such,
    # and the pasted fix (chmod, as the owner) is the whole repair; no "not installed", no reinstall.
    Scenario("unreadable-site-packages", "onnxruntime-gpu[cuda,cudnn] 1.31.1 in a venv whose site-packages "
             "the checking user cannot read", ((GPU, *CUDA13),), ("path-unreadable",), unreadable=".", ci=True),
    Scenario("no-driver-1.22-cuda13-wheels", "onnxruntime-gpu 1.22.0 (CUDA 12) with the CUDA 13 wheels; the "
             "check after the fix runs the smoke session", (("onnxruntime-gpu==1.22.0",), CUDA13),
             ("cuda-major-mismatch",), fix_needs=(("onnxruntime-gpu[cuda,cudnn]==1.22.0",),), smoke=True),
    Scenario("no-driver-1.18-alone", "onnxruntime-gpu 1.18.0 (CUDA 11.8) without NVIDIA wheels; the check "
             "after the fix runs the smoke session", (("onnxruntime-gpu==1.18.0", "numpy<2"),),
             ("cuda-lib-missing",), fix_needs=(FIX_CUDA11,), smoke=True),
    Scenario("no-driver-1.17-alone", "onnxruntime-gpu 1.17.1 (CUDA 11.8) without NVIDIA wheels; the check "
             "after the fix runs the smoke session", (("onnxruntime-gpu==1.17.1", "numpy<2"),),
             ("cuda-lib-missing",), fix_needs=(FIX_CUDA11,), smoke=True),
)

BY_NAME = {s.name: s for s in SCENARIOS}

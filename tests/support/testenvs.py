"""Real installed environments for tests: the real onnxruntime wheels and NVIDIA CUDA wheels.

Each environment is a ``pip install --target`` directory under ``.testenvs/`` in the repository,
provisioned once (PyPI is needed the first time) and reused. Tests compose them on ``PYTHONPATH`` /
``sys.path`` the way people do with ``--target`` installs, layered images and venvs.

The versions are pinned to what the GPU validation machine runs, so results here and there compare.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASE = Path(os.environ.get("ORTDOCTOR_TESTENVS", ROOT / ".testenvs"))

ORT_GPU_VERSION = "1.31.1"
ORT_CPU_VERSION = "1.31.1"

# name -> (pip arguments, whether to resolve dependencies)
ENVS: dict[str, tuple[list[str], bool]] = {
    # onnxruntime-gpu alone (no NVIDIA wheels): the provider's dependencies must come from elsewhere.
    "ort-gpu": ([f"onnxruntime-gpu=={ORT_GPU_VERSION}"], False),
    # the CPU build alone.
    "ort-cpu": ([f"onnxruntime=={ORT_CPU_VERSION}"], False),
    # both distributions installed into one location: the GPU wheel first, the CPU wheel last, so the
    # CPU wheel's files win, as when a transitive dependency pulls `onnxruntime` in after the fact.
    "ort-both": ([f"onnxruntime-gpu=={ORT_GPU_VERSION}", f"onnxruntime=={ORT_CPU_VERSION}"], False),
    # the CUDA 13 wheels that onnxruntime-gpu[cuda,cudnn] pulls in, at the GPU machine's versions.
    "nvidia-cu13": (
        [
            "nvidia-cuda-runtime==13.0.96",
            "nvidia-cuda-nvrtc==13.0.88",
            "nvidia-cublas==13.1.0.3",
            "nvidia-cufft==12.0.0.61",
            "nvidia-curand==10.4.0.35",
            "nvidia-cudnn-cu13==9.19.0.56",
        ],
        True,
    ),
    # onnxruntime 1.18.0 (CPU): built against NumPy 1.x, so it cannot be imported beside NumPy 2.
    "ort-1.18-cpu": (["onnxruntime==1.18.0"], False),
    # only the CUDA 12 runtime: the classic major mismatch beside a CUDA 13 onnxruntime-gpu.
    "nvidia-cu12-runtime": (["nvidia-cuda-runtime-cu12==12.9.79"], False),
    # onnxruntime-gpu 1.20.2 (CUDA 12, cuDNN 9): its CUDA provider lists the cuDNN 9 sub-libraries in
    # DT_NEEDED, the one line that does (the convergence grid installs the same wheel).
    "ort-gpu-1.20": (["onnxruntime-gpu==1.20.2"], False),
    # the Linux aarch64 wheel of onnxruntime-gpu (manylinux_2_34), installed here as a tree to read: an
    # x86_64 machine cannot run it, but check reads its files as it reads any other platform's.
    "ort-gpu-aarch64": (["--platform=manylinux_2_34_aarch64", f"onnxruntime-gpu=={ORT_GPU_VERSION}"], False),
}

#: The one download cache of the real wheels, shared with the convergence grid
#: (tests/convergence/harness.py): each wheel is fetched once, whichever test wants it first.
WHEELS = Path(os.environ.get("ORTDOCTOR_CONVERGENCE_WHEELS", BASE / "convergence-wheels"))


def ensure(name: str) -> Path:
    """Return the site directory of environment ``name``, installing it first if needed."""
    target = _install(name)
    if name == "ort-both":
        return next(target.glob("lib/python*/site-packages"))
    return target


def _install(name: str) -> Path:
    args, with_deps = ENVS[name]
    target = BASE / name
    done = target / ".complete"
    if done.exists():
        return target
    BASE.mkdir(parents=True, exist_ok=True)
    with open(BASE / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return target
        if target.exists():
            subprocess.run(["rm", "-rf", str(target)], check=True)
        deps = [] if with_deps else ["--no-deps"]
        _download([*deps, *args])
        if name == "ort-both":
            # Two installs, in order, into one ordinary site-packages (--prefix uses the normal install
            # scheme, file by file, unlike --target which replaces whole directories): the second
            # overwrites the shared files and leaves the first one's extra files, as pip does in a venv.
            for req in args:
                _pip(["--no-deps", "--prefix", str(target), req])
        else:
            _pip([*deps, "--target", str(target), *args])
        missing = _not_installed(target, args)
        if missing:  # never mark a half-made environment complete: every later run would reuse it
            raise RuntimeError(f"provisioning {name} left out {', '.join(missing)} (in {target})")
        done.write_text("ok\n")
    return target


def _not_installed(target: Path, requirements: list[str]) -> list[str]:
    """The pinned requirements without a ``<name>-<version>.dist-info`` under ``target``."""
    found = {p.name.lower() for p in target.rglob("*.dist-info")}
    out = []
    for req in requirements:
        if req.startswith("-"):  # an option (--platform=...), not a requirement
            continue
        name, _, version = req.partition("==")
        if f"{name.replace('-', '_').lower()}-{version}.dist-info" not in found:
            out.append(req)
    return out


def _download(args: list[str]) -> None:
    """Fetch the wheels into the shared cache (pip skips a file the cache already holds)."""
    WHEELS.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
          "--only-binary=:all:", "-d", str(WHEELS), *args])


def _pip(args: list[str]) -> None:
    # --ignore-installed: pip must not count what the running interpreter has (a venv holding
    # onnxruntime-gpu made `--prefix` skip it as "already satisfied" and left ort-both half-made).
    # --no-index: from the shared cache only, which _download has filled.
    _run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
          "--only-binary=:all:", "--ignore-installed", "--no-index", "--find-links", str(WHEELS), *args])


def _run(cmd: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PIP_FIND_LINKS"}
    env["PIP_NO_CACHE_DIR"] = "1"  # the wheel cache is the one copy
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"provisioning a test environment failed: {' '.join(cmd)}\n{proc.stderr[-4000:]}")


if __name__ == "__main__":  # python -m tests.support.testenvs [name ...]: provision ahead of time
    for env_name in sys.argv[1:] or list(ENVS):
        print(env_name, ensure(env_name))

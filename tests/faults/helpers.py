"""Broken environments for the fault and security suites, and a runner for the real CLI.

Every case builds a real tree (dist-info files with real RECORD hashes, gcc-compiled libraries with
the CUDA sonames) under one base directory that other users can traverse (so cases can drop to
``nobody``), runs ``python -m ortdoctor ...`` in a subprocess with PYTHONPATH pointing at it, and
checks what the contract promises: a clear message, the right exit code, no traceback, no hang, and
nothing written into the tree or the current directory.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import sysconfig
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.fake_site import install_dist
from tests.support.sharedlibs import CUDA13, VERSION_SOURCES, build_so

ROOT = Path(__file__).resolve().parents[2]
TRACEBACK = "Traceback (most recent call last)"
TIMEOUT = 90  # seconds; a case that needs longer has hung

PROVIDER = "onnxruntime/capi/libonnxruntime_providers_cuda.so"
PYBIND = "onnxruntime/capi/onnxruntime_pybind11_state.cpython-311-x86_64-linux-gnu.so"
BUILD_INFO = "onnxruntime/capi/build_and_package_info.py"
ORT_DIST_INFO = "onnxruntime_gpu-1.31.1.dist-info"
CU13_LIB = "nvidia/cu13/lib"
CUDNN_LIB = "nvidia/cudnn/lib"


def nobody() -> tuple[int, int] | None:
    """(uid, gid) of the unprivileged ``nobody`` user, or None when there is none."""
    try:
        pw = pwd.getpwnam("nobody")
    except KeyError:
        return None
    return pw.pw_uid, pw.pw_gid


def build_libraries(out: Path) -> dict[str, Path]:
    """Compile the fake CUDA 13 / cuDNN 9 libraries and the onnxruntime provider and pybind module."""
    libs: dict[str, Path] = {}
    for soname in CUDA13:
        needed = (libs["libcublasLt.so.13"],) if soname == "libcublas.so.13" else ()
        libs[soname] = build_so(out / "cuda", soname, needed=needed, source=VERSION_SOURCES.get(soname),
                                extra_args=("-Wl,-rpath,$ORIGIN",))
    libs["libcudnn.so.9"] = build_so(out / "cudnn", "libcudnn.so.9", source=VERSION_SOURCES["libcudnn.so.9"])
    libs["libcudnn_graph.so.9"] = build_so(out / "cudnn", "libcudnn_graph.so.9")
    required = tuple(libs[s] for s in ("libcublasLt.so.13", "libcublas.so.13", "libcurand.so.10",
                                       "libcudart.so.13"))
    libs["provider"] = build_so(out / "ort", "libonnxruntime_providers_cuda.so", needed=required)
    libs["pybind"] = build_so(out / "ort", "onnxruntime_pybind11_state.so")
    return libs


def install_gpu_site(site: Path, libs: Mapping[str, Path]) -> Path:
    """A site-packages like a venv's after ``pip install 'onnxruntime-gpu[cuda,cudnn]'`` (CUDA 13 layout)."""
    install_dist(site, "onnxruntime-gpu", "1.31.1", {
        "onnxruntime/__init__.py": b"raise ImportError('this test onnxruntime is never to be imported')\n",
        BUILD_INFO: b"package_name = 'onnxruntime-gpu'\n__version__ = '1.31.1'\ncuda_version = '13.0'\n",
        PROVIDER: libs["provider"],
        PYBIND: libs["pybind"],
    }, requires=("nvidia-cudnn-cu13~=9.0; extra == 'cudnn'",))
    cuda_pkgs = {"libcudart.so.13": ("nvidia-cuda-runtime", "13.0.96"), "libcublas.so.13": ("nvidia-cublas", "13.1.0.3"),
                 "libcublasLt.so.13": ("nvidia-cublas", "13.1.0.3"), "libnvrtc.so.13": ("nvidia-cuda-nvrtc", "13.0.88"),
                 "libcurand.so.10": ("nvidia-curand", "10.4.0.35"), "libcufft.so.12": ("nvidia-cufft", "12.0.0.61")}
    by_pkg: dict[tuple[str, str], dict[str, bytes | Path]] = {}
    for soname, pkg in cuda_pkgs.items():
        by_pkg.setdefault(pkg, {})[f"{CU13_LIB}/{soname}"] = libs[soname]
    for (name, version), files in by_pkg.items():
        install_dist(site, name, version, files)
    install_dist(site, "nvidia-cudnn-cu13", "9.19.0.56", {
        f"{CUDNN_LIB}/libcudnn.so.9": libs["libcudnn.so.9"],
        f"{CUDNN_LIB}/libcudnn_graph.so.9": libs["libcudnn_graph.so.9"],
    })
    return site


_UNPRIVILEGED: dict[tuple[int, int], tuple[str, list[str]] | None] = {}


def unprivileged_python(ids: tuple[int, int]) -> tuple[str, list[str]] | None:
    """An interpreter the user ``ids`` can run ortdoctor with: (executable, extra PYTHONPATH entries).

    This interpreter when that user can execute it; otherwise (a venv whose base interpreter lives in
    root's home) the system's python of the same major.minor with this environment's site-packages
    added, so ortdoctor's dependencies are found. None when neither works.
    """
    if ids in _UNPRIVILEGED:
        return _UNPRIVILEGED[ids]
    uid, gid = ids

    def drop() -> None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    purelib = sysconfig.get_paths()["purelib"]
    ver = f"{sys.version_info[0]}.{sys.version_info[1]}"
    found: tuple[str, list[str]] | None = None
    for python, extra in ((sys.executable, []), (f"/usr/bin/python{ver}", [purelib]),
                          (f"/usr/local/bin/python{ver}", [purelib])):
        env = clean_env({"PYTHONPATH": os.pathsep.join([str(ROOT), *extra]), "HOME": "/nonexistent"})
        try:
            proc = subprocess.run([python, "-c", f"import sys, ortdoctor.cli.main, yaml, click; "
                                               f"assert sys.version_info[:2] == {tuple(sys.version_info[:2])}"],
                                  env=env, cwd="/", capture_output=True, timeout=60, preexec_fn=drop)
        except (OSError, subprocess.SubprocessError):
            continue
        if proc.returncode == 0:
            found = (python, extra)
            break
    _UNPRIVILEGED[ids] = found
    return found


@dataclass
class Result:
    """One CLI run: exit code, both streams (decoded), and the JSON on stdout when there is one."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def data(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.stdout)
        return parsed

    def finding_ids(self) -> list[str]:
        return [f["id"] for f in self.data.get("findings", [])]

    def finding(self, fid: str) -> dict[str, Any]:
        hits: list[dict[str, Any]] = [f for f in self.data.get("findings", []) if f["id"] == fid]
        assert hits, (fid, self.finding_ids())
        return hits[0]

    @property
    def text(self) -> str:
        return self.stdout + "\n" + self.stderr


def clean_env(extra: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """This process's environment without anything that steers ortdoctor or the loader."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ORTDOCTOR_", "FAKE_NVML")) and k not in (
               "LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH",
               "CUDNN_PATH", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "PYTHONWARNINGS")}
    env["ORTDOCTOR_CACHE"] = "0"  # the hook's cache would write into ~/.cache
    env["NO_COLOR"] = "1"
    for k, v in (extra or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def run_cli(
    args: Sequence[str],
    *,
    sites: Sequence[str | Path] = (),
    cwd: Path,
    env: Mapping[str, str | None] | None = None,
    as_user: tuple[int, int] | None = None,
    timeout: float = TIMEOUT,
    stdin: bytes | None = None,
    argv0: Sequence[str] | None = None,
) -> Result:
    """``python -m ortdoctor <args>`` with PYTHONPATH = the repository, then ``sites``."""
    full_env = clean_env(env)
    full_env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *(os.fspath(s) for s in sites)])
    argv = [*(argv0 or (sys.executable, "-m", "ortdoctor")), *args]
    preexec = None
    if as_user is not None:
        uid, gid = as_user
        python, extra_path = unprivileged_python(as_user) or (sys.executable, [])
        if argv0 is None:
            argv[0] = python
        full_env["PYTHONPATH"] = os.pathsep.join([full_env["PYTHONPATH"], *extra_path])

        def preexec() -> None:  # drop root for the child only: unreadable directories stay unreadable
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)

        full_env["HOME"] = "/nonexistent"
    proc = subprocess.run(argv, cwd=cwd, env=full_env, capture_output=True, timeout=timeout,
                          input=stdin if stdin is not None else b"", preexec_fn=preexec)
    res = Result(argv, proc.returncode, proc.stdout.decode("utf-8", "replace"),
                 proc.stderr.decode("utf-8", "replace"))
    assert TRACEBACK not in res.stdout, res.text[-4000:]
    assert TRACEBACK not in res.stderr, res.text[-4000:]
    assert res.returncode in (0, 1, 2, 3), res.returncode
    return res


# --------------------------------------------------------------------------------------------------
# "Nothing written": a snapshot of a tree (names, types, sizes, modes, mtimes; symlinks not followed)
# --------------------------------------------------------------------------------------------------
def snapshot(*roots: Path | str) -> dict[str, tuple[int, int, int, str]]:
    out: dict[str, tuple[int, int, int, str]] = {}
    for root in roots:
        root_s = os.fspath(root)
        for dirpath, dirnames, filenames in os.walk(root_s, followlinks=False, onerror=lambda _e: None):
            for name in [*dirnames, *filenames]:
                full = os.path.join(dirpath, name)
                try:
                    st = os.lstat(full)
                except OSError:
                    continue
                link = os.readlink(full) if stat.S_ISLNK(st.st_mode) else ""
                size = st.st_size if stat.S_ISREG(st.st_mode) else 0
                out[full] = (st.st_mode, size, st.st_mtime_ns, link)
            try:
                st = os.lstat(dirpath)
                out[dirpath] = (st.st_mode, 0, st.st_mtime_ns, "")
            except OSError:
                pass
    return out


def assert_unchanged(before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    written = {"added": added[:10], "removed": removed[:10], "changed": changed[:10]}
    assert not any(written.values()), written


def remove_tree(path: Path) -> None:
    """rm -rf that also works on trees a case made unreadable or immutable-looking."""
    for dirpath, dirnames, _files in os.walk(path, followlinks=False):
        for d in dirnames:
            full = os.path.join(dirpath, d)
            if not os.path.islink(full):
                try:
                    os.chmod(full, 0o755)
                except OSError:
                    pass
    shutil.rmtree(path, ignore_errors=True)

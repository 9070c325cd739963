"""Helpers for the preload, loader and hook tests: fake CUDA trees built from real gcc libraries, and a
child-process runner (every real load happens in a child, which reads its own /proc/self/maps)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.sharedlibs import CUDA13, VERSION_SOURCES, build_so

ROOT = Path(__file__).resolve().parents[1]



def build_cuda_libs(lib_dir: Path, sonames: tuple[str, ...] = CUDA13) -> dict[str, Path]:
    """Real shared libraries with the CUDA sonames; libcublas NEEDS libcublasLt, as the real one does."""
    out: dict[str, Path] = {}
    for soname in sonames:
        needed = (out["libcublasLt.so.13"],) if soname == "libcublas.so.13" and "libcublasLt.so.13" in out else ()
        out[soname] = build_so(lib_dir, soname, needed=needed, source=VERSION_SOURCES.get(soname),
                               extra_args=("-Wl,-rpath,$ORIGIN",))
    return out


def build_fake_site(site: Path, *, cuda_libs: tuple[str, ...] = CUDA13, cudnn: bool = True,
                    ort: bool = True) -> Path:
    """A site directory like a venv's: onnxruntime (CUDA 13 build whose provider NEEDS the CUDA sonames)
    plus NVIDIA wheels in the consolidated CUDA 13 layout."""
    libs = build_cuda_libs(site / "nvidia" / "cu13" / "lib", cuda_libs)
    for name, ver in (("nvidia_cuda_runtime", "13.0.96"), ("nvidia_cublas", "13.1.0.3")):
        (site / f"{name}-{ver}.dist-info").mkdir(parents=True, exist_ok=True)
    if cudnn:
        build_so(site / "nvidia" / "cudnn" / "lib", "libcudnn.so.9", source=VERSION_SOURCES["libcudnn.so.9"])
        build_so(site / "nvidia" / "cudnn" / "lib", "libcudnn_graph.so.9")
        (site / "nvidia_cudnn_cu13-9.19.0.56.dist-info").mkdir(exist_ok=True)
    if ort:
        add_fake_ort(site, tuple(libs.values()))
    return site


def add_fake_ort(site: Path, needed: tuple[Path, ...] = ()) -> Path:
    capi = site / "onnxruntime" / "capi"
    capi.mkdir(parents=True, exist_ok=True)
    (site / "onnxruntime" / "__init__.py").write_text("raise ImportError('the fake onnxruntime is not imported')\n")
    (capi / "build_and_package_info.py").write_text(
        "package_name = 'onnxruntime-gpu'\n__version__ = '1.31.1'\ncuda_version = '13.0'\n")
    # the provider library NEEDS the CUDA sonames, as the real one does (linked against the built libs)
    build_so(capi, "libonnxruntime_providers_cuda.so", needed=needed)
    return site / "onnxruntime"


def run_child(code: str, *, pythonpath: list[Path | str], cwd: Path | None = None,
              env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter; PYTHONPATH is exactly the given dirs plus the repository."""
    child_env = {k: v for k, v in os.environ.items()
                 if not k.startswith("ORTDOCTOR_") and k not in ("LD_LIBRARY_PATH", "PYTHONPATH", "CONDA_PREFIX",
                                                                   "CUDA_HOME", "CUDA_PATH", "CUDNN_PATH")}
    child_env["PYTHONPATH"] = os.pathsep.join([*(str(p) for p in pythonpath), str(ROOT)])
    child_env["PYTHONWARNINGS"] = "default"
    child_env["ORTDOCTOR_CACHE"] = "0"  # the hook's cache is tested on purpose, in a tmp dir
    child_env.update(env or {})
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=child_env, capture_output=True, text=True,
                          timeout=timeout)


MAPS_SNIPPET = """
import json, os
def _mapped():
    out = []
    for line in open('/proc/self/maps'):
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith('/') and '.so' in parts[5]:
            p = os.path.realpath(parts[5].strip())
            if p not in out:
                out.append(p)
    return out
"""


def child_json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return data

"""Build the fake NVML library (tests/support/fake_nvml.c) and run code against it in a subprocess.

The driver probe finds ``libnvidia-ml.so.1`` through LD_LIBRARY_PATH (among other places), which a
running process cannot change for itself: tests that use it run the probe in a child interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.sharedlibs import build_so

SOURCE = Path(__file__).with_name("fake_nvml.c")
ROOT = Path(__file__).resolve().parents[2]


def build(out_dir: Path, *, libcuda: bool = True, defines: tuple[str, ...] = ()) -> Path:
    """Compile the fake into ``out_dir/libnvidia-ml.so.1`` (soname libnvidia-ml.so.1), and beside it a
    ``libcuda.so.1`` stand-in (no functions: a driver's CUDA library is there, as on a real GPU host;
    ``libcuda=False`` is a container started with NVIDIA_DRIVER_CAPABILITIES=utility). ``defines`` are
    the C file's build switches, e.g. ``FAKE_NVML_NO_CUDA_VERSION_V2`` (an older driver's symbol set)."""
    if libcuda:
        build_so(out_dir, "libcuda.so.1")
    return build_so(out_dir, "libnvidia-ml.so.1", source=SOURCE.read_text(),
                    extra_args=tuple(f"-D{d}" for d in defines))


def env_for(lib_dir: Path, spec: str, *, log: Path | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment variables for a child process that should find the fake driver library."""
    env = dict(os.environ if base is None else base)
    env["LD_LIBRARY_PATH"] = str(lib_dir)
    env["FAKE_NVML"] = spec
    env["PYTHONPATH"] = str(ROOT)
    if log is not None:
        env["FAKE_NVML_LOG"] = str(log)
    return env


_PROBE = """
import json, sys
from ortdoctor.core.facts import to_jsonable
from ortdoctor.probes.driver import probe_driver
print(json.dumps(to_jsonable(probe_driver())))
"""


def run_probe_driver(env: dict[str, str]) -> dict[str, Any]:
    """Run ``probe_driver()`` in a child interpreter with ``env``; return its facts as JSON data."""
    proc = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    if proc.returncode != 0:
        raise AssertionError(f"probe_driver child failed ({proc.returncode}):\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result

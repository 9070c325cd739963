"""The real ``onnxruntime-ep-nv-tensorrt-rtx-cu13`` 0.5.0 wheel (146 MB) for the tests that read it.

Installed once with ``pip install --no-deps --target`` into ``$ORTDOCTOR_PLUGIN_TESTENVS`` (default
``/tmp/ortdoctor-plugin-testenvs``), apart from the shared ``.testenvs/``; a test that needs it is skipped
when PyPI cannot be reached. Its ELF facts are also committed (tests/data/plugin_eps/), so the stand-in
tests run everywhere.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

BASE = Path(os.environ.get("ORTDOCTOR_PLUGIN_TESTENVS", "/tmp/ortdoctor-plugin-testenvs"))
TRT_RTX_CU13 = "onnxruntime-ep-nv-tensorrt-rtx-cu13==0.5.0"


def ensure_trt_rtx_cu13() -> Path:
    """The site directory holding the real plugin package; skips the test when it cannot be installed."""
    target = BASE / "ep-nv-tensorrt-rtx-cu13-0.5.0"
    done = target / ".complete"
    if done.exists():
        return target
    BASE.mkdir(parents=True, exist_ok=True)
    with open(BASE / ".ep-nv-tensorrt-rtx-cu13.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return target
        if target.exists():
            subprocess.run(["rm", "-rf", str(target)], check=True)
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
               "--only-binary=:all:", "--target", str(target), TRT_RTX_CU13]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"the real {TRT_RTX_CU13} wheel could not be installed: {proc.stderr[-500:]}")
        done.write_text("ok\n")
    return target

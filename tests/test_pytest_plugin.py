"""The pytest plugin end to end: a real pytest subprocess runs a small GPU test suite in tmp_path against
the real onnxruntime and NVIDIA wheels (composed on PYTHONPATH), the plugin loaded as users get it.

On a machine without an NVIDIA driver the GPU tests skip with ``driver-missing``; where ortdoctor's smoke
session passes they run, and the fixture's session is on the CUDA EP. What to expect is read from
``ortdoctor check --json`` in the same environment, so the test is right on both kinds of machine.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.support import testenvs

ROOT = Path(__file__).resolve().parents[1]

GPU_SUITE = '''
import sys

import pytest


@pytest.mark.requires_cuda_ep
def test_marked():
    pass


def test_fixture(ort_cuda_session):
    import numpy as np
    from ortdoctor.prove.smoke.model import build_model

    model = build_model(8)
    session = ort_cuda_session(model.data)
    assert session.get_providers()[0] == "CUDAExecutionProvider"
    x = np.ones((8, 8), dtype=np.float32)
    assert session.run(None, {session.get_inputs()[0].name: x})[0].shape == (8, 8)


def test_cpu_part_runs_anyway():
    pass
'''


def _plugin_args() -> list[str]:
    """Load the plugin through its entry point when ortdoctor is installed, else by module name."""
    names = {ep.value for ep in importlib.metadata.entry_points(group="pytest11")}
    return [] if "ortdoctor.pytest_plugin" in names else ["-p", "ortdoctor.pytest_plugin"]


def _env(*envs: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    for key in ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "PYTEST_ADDOPTS", "ORTDOCTOR_MATRIX"):
        env.pop(key, None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *(str(testenvs.ensure(e)) for e in envs)])
    env.update(extra or {})
    return env


def run_suite(tmp_path: Path, source: str, *envs: str, args: tuple[str, ...] = (),
              extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # the suite's own rootdir, not this project's
    (tmp_path / "test_suite.py").write_text(textwrap.dedent(source))
    cmd = [sys.executable, "-m", "pytest", "-rs", "-W", "error", "-p", "no:cacheprovider", "--strict-markers",
           *_plugin_args(), *args, "test_suite.py"]
    return subprocess.run(cmd, cwd=tmp_path, env=_env(*envs, extra=extra_env), capture_output=True, text=True,
                          timeout=300)


def check_json(*envs: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "ortdoctor", "check", "--json"], env=_env(*envs),
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def skipped_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("SKIPPED")]


@pytest.mark.realwheels
def test_gpu_tests_skip_with_the_finding_or_run_on_the_cuda_ep(tmp_path: Path) -> None:
    envs = ("ort-gpu", "nvidia-cu13")
    report = check_json(*envs)
    proc = run_suite(tmp_path, GPU_SUITE, *envs)
    out = proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, out
    if report["smoke"]["ok"]:
        assert "3 passed" in out, out
        return
    first_error = next(f for f in report["findings"] if f["severity"] == "error")
    if not report["driver"]["available"]:  # this machine: no NVIDIA driver
        assert first_error["id"] == "driver-missing"
    assert "1 passed, 2 skipped" in out, out
    lines = skipped_lines(out)
    assert len(lines) == 2, out
    for line in lines:
        assert f"[{first_error['id']}]" in line
        assert first_error["title"] in line
        assert "fix: " in line
        # reported at the test, not inside the plugin
        assert "test_suite.py:" in line
        assert "pytest_plugin.py" not in line


@pytest.mark.realwheels
def test_cpu_onnxruntime_skips_with_ort_cpu_only(tmp_path: Path) -> None:
    proc = run_suite(tmp_path, GPU_SUITE, "ort-cpu", args=("--ortdoctor",))
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    lines = skipped_lines(out)
    assert len(lines) == 2, out
    assert all("[ort-cpu-only]" in line and "pip uninstall" in line for line in lines), lines
    # the header says the same; no smoke session was started for a CPU build
    header = out.split("collected")[0]
    assert "first: ort-cpu-only" in header
    assert "smoke" not in header.lower()


def test_no_onnxruntime_skips_with_ort_not_installed(tmp_path: Path) -> None:
    proc = run_suite(tmp_path, GPU_SUITE)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    lines = skipped_lines(out)
    assert len(lines) == 2, out
    assert all("[ort-not-installed]" in line for line in lines), out


@pytest.mark.realwheels
def test_header_shows_verdict_and_fixes(tmp_path: Path) -> None:
    report = check_json("ort-gpu", "nvidia-cu13")
    proc = run_suite(tmp_path, "def test_nothing():\n    pass\n", "ort-gpu", "nvidia-cu13", args=("--ortdoctor",))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    header = proc.stdout.split("collected")[0]
    assert re.search(r"^ortdoctor \S+: ", header, re.MULTILINE), header
    for f in report["findings"]:
        if f["severity"] in ("error", "warning"):
            assert f"[{f['id']}]" in header
    if report["verdict"] != "ok":
        assert "    fix: " in header


def test_inert_unless_asked(tmp_path: Path) -> None:
    """Loaded in every test session: registers its marker, imports nothing of ortdoctor, checks nothing."""
    suite = '''
        import sys

        def test_nothing_was_imported():
            loaded = [m for m in sys.modules if m.startswith(("ortdoctor.", "onnxruntime"))]
            assert sorted(loaded) == ["ortdoctor._version", "ortdoctor.pytest_plugin"], loaded
    '''
    proc = run_suite(tmp_path, suite)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
    markers = subprocess.run([sys.executable, "-m", "pytest", "--markers", *_plugin_args()], cwd=tmp_path,
                             env=_env(), capture_output=True, text=True, timeout=120)
    assert "@pytest.mark.requires_cuda_ep" in markers.stdout


def test_a_failing_check_is_an_error_not_a_skip(tmp_path: Path) -> None:
    """A broken $ORTDOCTOR_MATRIX (or an ortdoctor bug) must not pass for "no GPU here"."""
    bad = tmp_path / "bad-matrix.yaml"
    bad.write_text("this: [is not a matrix\n")
    proc = run_suite(tmp_path, GPU_SUITE, extra_env={"ORTDOCTOR_MATRIX": str(bad)})
    out = proc.stdout
    assert proc.returncode == 1, out
    assert re.search(r"\b1 passed, 2 errors\b", out), out
    assert "ortdoctor check raised MatrixError" in out
    assert not skipped_lines(out)


def test_entry_point_is_declared() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'\[project\.entry-points\.pytest11\]\s*\nortdoctor = "ortdoctor\.pytest_plugin"', text)

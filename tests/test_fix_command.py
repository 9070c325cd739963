"""`ortdoctor fix`: the findings' package steps merged into the fewest commands, shown, and run only with
--yes, through the inspected interpreter; then the check again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ortdoctor.core.facts import Finding, PackageStep
from ortdoctor.core.shell import posix_quote
from ortdoctor.decide.fix_plan import plan_fix
from ortdoctor.decide.fixes import Installer
from tests.support import testenvs

ROOT = Path(__file__).resolve().parents[1]


def _f(fid: str, severity: str, *steps: PackageStep, fix: str | None = "do it") -> Finding:
    return Finding(fid, severity, fid, "", fix, steps)  # type: ignore[arg-type]


def test_uninstalls_first_then_installs_each_spec_once() -> None:
    plan = plan_fix([
        _f("a", "error", PackageStep("uninstall", ("-y", "onnxruntime", "onnxruntime-gpu")),
           PackageStep("install", ("onnxruntime-gpu[cuda,cudnn]==1.31.1",))),
        _f("b", "warning", PackageStep("install", ("nvidia-curand==10.*", "onnxruntime-gpu[cuda,cudnn]==1.31.1"))),
        _f("c", "error", PackageStep("uninstall", ("-y", "nvidia-cudnn-cu12"))),
    ])
    assert plan.steps == (
        PackageStep("uninstall", ("-y", "onnxruntime", "onnxruntime-gpu", "nvidia-cudnn-cu12")),
        PackageStep("install", ("onnxruntime-gpu[cuda,cudnn]==1.31.1", "nvidia-curand==10.*")),
    )
    # errors before warnings, whatever the input order
    assert [f.id for f in plan.fixed] == ["a", "c", "b"]


def test_a_forced_reinstall_does_not_spread_to_other_specs() -> None:
    plan = plan_fix([
        _f("damaged", "error", PackageStep("install", ("--force-reinstall", "--no-deps", "onnxruntime-gpu==1.20.2"))),
        _f("missing", "error", PackageStep("install", ("nvidia-cublas-cu12==12.*",))),
    ])
    assert plan.steps == (PackageStep("install", ("nvidia-cublas-cu12==12.*",)),
                          PackageStep("install", ("--force-reinstall", "--no-deps", "onnxruntime-gpu==1.20.2")))


def test_notes_are_not_fixed_and_other_fixes_are_left_to_the_user() -> None:
    plan = plan_fix([_f("note", "info", PackageStep("install", ("x==1",))),
                     _f("driver-missing", "error", fix="install the driver"),
                     _f("no-fix", "warning", fix=None)])
    assert plan.empty
    assert [f.id for f in plan.manual] == ["driver-missing"]


def test_argv_for_an_interpreter_without_pip() -> None:
    steps = [PackageStep("uninstall", ("-y", "onnxruntime"))]
    assert Installer("/v/bin/python", has_pip=False).argvs(steps) == [
        ["/v/bin/python", "-m", "ensurepip", "--upgrade"], ["/v/bin/python", "-m", "pip", "uninstall", "-y", "onnxruntime"]]
    assert Installer("/v/bin/python", has_pip=False, uv="/u/uv").argvs(steps) == [
        ["/u/uv", "pip", "uninstall", "--python", "/v/bin/python", "onnxruntime"]]


# --------------------------------------------------------------------------------------------------
# The command, on a venv whose packages are the real wheels (both onnxruntime distributions) and whose
# pip is a recorder: what --yes runs, and with which interpreter, is what the test reads.
# --------------------------------------------------------------------------------------------------
_FAKE_PIP = '''import json, os, sys
with open(os.environ["FAKE_PIP_LOG"], "a") as f:
    f.write(json.dumps([sys.executable, *sys.argv[1:]]) + "\\n")
sys.exit(int(os.environ.get("FAKE_PIP_EXIT", "0")))
'''


def _venv(tmp_path: Path) -> Path:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "both.pth").write_text(str(testenvs.ensure("ort-both")) + "\n")
    (site / "pip").mkdir()
    (site / "pip" / "__init__.py").write_text("")
    (site / "pip" / "__main__.py").write_text(_FAKE_PIP)
    (site / "pip-99.0.dist-info").mkdir()
    (site / "pip-99.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: pip\nVersion: 99.0\n")
    return venv


def _fix(venv: Path, tmp_path: Path, *args: str, exit_code: int = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "LD_LIBRARY_PATH")}
    env.update(PYTHONPATH=str(ROOT), FAKE_PIP_LOG=str(tmp_path / "pip.log"), FAKE_PIP_EXIT=str(exit_code))
    return subprocess.run([sys.executable, "-m", "ortdoctor", "fix", "--python", str(venv / "bin" / "python"),
                           "--no-smoke", *args], env=env, capture_output=True, text=True, timeout=180, cwd=tmp_path)


def _log(tmp_path: Path) -> list[list[str]]:
    path = tmp_path / "pip.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_without_yes_it_shows_the_commands_and_runs_nothing(tmp_path: Path) -> None:
    venv = _venv(tmp_path)
    proc = _fix(venv, tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    py = str(venv / "bin" / "python")
    assert f"  {py} -m pip uninstall -y onnxruntime onnxruntime-gpu\n" in proc.stdout
    assert f"  {py} -m pip install 'onnxruntime-gpu[cuda,cudnn]==1.31.1'\n" in proc.stdout
    # run by the interpreter that wrote the plan, not by whichever `ortdoctor` is first on PATH
    assert f"\n  {posix_quote(sys.executable)} -m ortdoctor fix --python {posix_quote(py)} --yes\n" in proc.stdout
    assert "driver-missing:" in proc.stdout  # no driver here: the user's part, named
    assert _log(tmp_path) == []
    assert proc.returncode == 1  # the environment cannot use the GPU as it is


def test_yes_runs_them_through_the_inspected_interpreter_then_checks_again(tmp_path: Path) -> None:
    venv = _venv(tmp_path)
    proc = _fix(venv, tmp_path, "--yes")
    assert "Traceback" not in proc.stderr, proc.stderr
    calls = _log(tmp_path)
    assert [c[1:] for c in calls] == [["uninstall", "-y", "onnxruntime", "onnxruntime-gpu"],
                                      ["install", "onnxruntime-gpu[cuda,cudnn]==1.31.1"]]
    assert all(os.path.realpath(c[0]).startswith(os.path.realpath(venv)) or c[0].startswith(str(venv))
               for c in calls)
    assert "\n$ " in proc.stderr  # each command is announced where pip's output goes
    # the recorder changed nothing, so the second check still finds both packages
    assert "Checked again:" in proc.stdout
    assert "[ort-multiple-packages]" in proc.stdout.split("Checked again:")[1]
    assert proc.returncode == 1


def test_a_failing_command_stops_the_rest(tmp_path: Path) -> None:
    venv = _venv(tmp_path)
    proc = _fix(venv, tmp_path, "--yes", exit_code=1)
    assert len(_log(tmp_path)) == 1
    assert "ortdoctor fix: stopped:" in proc.stdout
    assert "failed (exit 1)" in proc.stdout
    assert "Checked again" not in proc.stdout
    assert proc.returncode == 1

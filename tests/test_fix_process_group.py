"""`ortdoctor fix --yes` runs each command in a process group of its own, and a command past its time limit
is killed with everything it started: pip's children (a build backend, a download helper) must not keep
running after ortdoctor gave up on the step."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ortdoctor.doctor import fix

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone: it runs nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def _wait_for(path: Path) -> str:
    for _ in range(500):  # the script writes it first thing; this only waits for it to start
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.01)
    raise AssertionError(f"{path} was never written")


def test_a_step_past_its_limit_is_killed_with_its_children(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pidfile = tmp_path / "grandchild.pid"
    # the role of pip: it starts a helper of its own and waits for it
    script = tmp_path / "pip-stand-in.sh"
    script.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > '{pidfile}'\nwait\n")
    script.chmod(0o755)
    monkeypatch.setattr(fix, "STEP_TIMEOUT_S", 1.0)
    with open(tmp_path / "log", "w") as log, pytest.raises(subprocess.TimeoutExpired):
        fix._run([str(script)], log)
    grandchild = int(_wait_for(pidfile))
    try:
        for _ in range(500):  # SIGKILL is delivered at once; the loop only absorbs scheduling
            if not _alive(grandchild):
                break
            time.sleep(0.01)
        assert not _alive(grandchild), "the step's own child outlived the time limit"
    finally:
        if _alive(grandchild):
            os.kill(grandchild, 9)


def test_each_step_has_a_process_group_of_its_own(tmp_path: Path) -> None:
    out = tmp_path / "pgid"
    code = f"import os; open({str(out)!r}, 'w').write(str(os.getpgid(0)) + ' ' + str(os.getpid()))"
    with open(tmp_path / "log", "w") as log:
        assert fix._run([sys.executable, "-c", code], log) == 0
    pgid, pid = out.read_text().split()
    assert pgid == pid  # the leader of its own group: killpg reaches it and all it starts
    assert int(pgid) != os.getpgid(0)


def test_the_timeout_kills_the_group_also_through_apply_fix_s_default_runner(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default runner of apply_fix is the one above: a step past its limit comes back as a failed step
    (exit -1, the reason named), the rest does not run, and no check follows."""
    from ortdoctor.core.facts import Finding, PackageStep
    from ortdoctor.decide.fix_plan import plan_fix
    from ortdoctor.decide.fixes import Installer

    pidfile = tmp_path / "grandchild.pid"
    python = tmp_path / "python"  # the inspected interpreter's stand-in: `python -m pip ...` lands here
    python.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > '{pidfile}'\nwait\n")
    python.chmod(0o755)
    monkeypatch.setattr(fix, "STEP_TIMEOUT_S", 1.0)
    finding = Finding("ort-cpu-only", "error", "t", "", "x", (PackageStep("install", ("onnxruntime-gpu==1.31.1",)),))

    class _Report:  # the two things apply_fix reads from a report
        findings = (finding,)

        class env:
            python = None

    monkeypatch.setattr(fix, "plan_for", lambda report: (plan_fix(report.findings), Installer(str(python))))
    with open(tmp_path / "log", "w") as log:
        result = fix.apply_fix(None, _Report(), log=log)  # type: ignore[arg-type]
    assert [r.returncode for r in result.runs] == [-1]
    assert "TimeoutExpired" in (result.runs[0].error or "")
    assert result.after is None
    grandchild = int(_wait_for(pidfile))
    for _ in range(500):
        if not _alive(grandchild):
            break
        time.sleep(0.01)
    assert not _alive(grandchild)

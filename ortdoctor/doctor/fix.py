"""`ortdoctor fix` as a library call: check, merge the findings' package steps, run them (only when asked)
through the inspected interpreter, check again.

Nothing here prints: pip's own output goes to ``log`` (the CLI passes stderr), the results come back as
data for :mod:`ortdoctor.report.fix`.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from typing import IO, Any

from ortdoctor.core.record import record, replace
from ortdoctor.decide.fix_plan import FixPlan, plan_fix
from ortdoctor.decide.fixes import Installer
from ortdoctor.doctor.check import CheckOptions, run_check
from ortdoctor.prove.child_process import kill_group
from ortdoctor.report.model import Report

__all__ = ["FixResult", "StepRun", "apply_fix", "plan_for"]

# pip resolving and downloading the CUDA wheels (~1 GB) on a slow link
STEP_TIMEOUT_S = 3600.0

Runner = Callable[[Sequence[str], "IO[str] | None"], int]


@record
class StepRun:
    argv: tuple[str, ...]
    returncode: int  # -1: it could not be started, or ran past its timeout
    error: str | None = None


@record
class FixResult:
    before: Report
    plan: FixPlan
    installer: Installer
    runs: tuple[StepRun, ...] = ()
    after: Report | None = None  # the check after the steps (None: nothing ran, or a step failed)

    @property
    def failed_step(self) -> StepRun | None:
        return next((r for r in self.runs if r.returncode != 0), None)


def plan_for(report: Report) -> tuple[FixPlan, Installer]:
    """The merged package steps for ``report``'s findings and the interpreter that runs them."""
    installer = Installer.of(report.env.python)
    return plan_fix(report.findings, windows=installer.windows), installer


def _run(argv: Sequence[str], log: IO[str] | None) -> int:
    """Run one command in a process group of its own; past :data:`STEP_TIMEOUT_S`, or when ortdoctor itself
    is interrupted, the whole group is killed: pip's own children (a build backend, a download helper)
    must not outlive it.

    Raises:
        subprocess.TimeoutExpired: it ran past the limit (the group is killed first).
    """
    kwargs: dict[str, Any] = {}
    if os.name == "posix":
        kwargs["start_new_session"] = True
    else:
        kwargs["creationflags"] = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    if log is not None:
        log.flush()  # our own lines first, then the command's
    proc = subprocess.Popen(list(argv), stdout=log, stderr=log, stdin=subprocess.DEVNULL, close_fds=True, **kwargs)
    try:
        return proc.wait(timeout=STEP_TIMEOUT_S)
    except BaseException:  # the timeout, Ctrl-C, anything: nothing of the group stays behind
        kill_group(proc)
        proc.wait()
        raise


def apply_fix(options: CheckOptions, before: Report, *, log: IO[str] | None = None,
              runner: Runner | None = None, on_step: Callable[[Sequence[str]], Any] | None = None) -> FixResult:
    """Run ``before``'s merged steps in order, stopping at the first that fails; then check again with the
    same ``options``."""
    plan, installer = plan_for(before)
    run = runner or _run
    runs: list[StepRun] = []
    for argv in plan.argvs(installer):
        if on_step is not None:
            on_step(argv)
        try:
            code, error = run(argv, log), None
        except (OSError, subprocess.SubprocessError) as exc:
            code, error = -1, f"{type(exc).__name__}: {exc}"
        runs.append(StepRun(tuple(argv), code, error))
        if code != 0:
            return FixResult(before, plan, installer, tuple(runs))
    after = run_check(replace(options)) if runs else None
    return FixResult(before, plan, installer, tuple(runs), after)

"""The text of `ortdoctor fix`: the plan before anything runs, and what is left after it ran."""

from __future__ import annotations

from ortdoctor.core.facts import Finding
from ortdoctor.core.shell import compose, render, split_fix
from ortdoctor.decide.fix_plan import FixPlan
from ortdoctor.decide.fixes import Installer, ortdoctor_command
from ortdoctor.report.model import Report

__all__ = ["render_plan", "render_result"]


def _line(f: Finding) -> str:
    return f"  {f.id:<28} {f.title}"


def _manual(findings: tuple[Finding, ...]) -> list[str]:
    if not findings:
        return []
    lines = ["", "Not a package command; do it yourself:"]
    for f in findings:
        commands, prose = split_fix(f.fix or "", bool(f.commands))
        lines.append(f"  {f.id}:")
        lines += [f"    {r}" for r in commands]
        lines += [f"    ({r})" if commands else f"    {r}" for r in prose]
    return lines


def render_plan(report: Report, plan: FixPlan, installer: Installer, *, python_option: str | None = None,
                ortdoctor_python: str | None = None) -> str:
    """What ``fix --yes`` would run, for which interpreter, and what it leaves to the user. ``ortdoctor_python``:
    the interpreter ortdoctor runs in (default: the inspected one, unless ``--python`` named another), which
    the printed ``fix --yes`` line is run by."""
    lines = [f"ortdoctor fix: the environment of {installer.python}"]
    if plan.empty and not plan.manual:
        lines.append("Nothing to fix: no error or warning has a fix (run `ortdoctor check` for the report).")
        return "\n".join(lines) + "\n"
    if plan.empty:
        lines.append("No package command fixes what check found.")
    else:
        lines.append(f"{len(plan.fixed)} finding{'s' if len(plan.fixed) != 1 else ''} fixed by package commands:")
        lines += [_line(f) for f in plan.fixed]
        lines += ["", "Commands, one per line (each names the interpreter whose pip it runs):"]
        lines += [f"  {line}" for line in compose(plan.lines(installer), plan.note(installer),
                                                   windows=installer.windows).splitlines()]
    lines += _manual(plan.manual)
    if not plan.empty:
        own = ortdoctor_python or (None if report.env.python.inspected_other else report.env.python.executable)
        yes = ortdoctor_command(own, "fix", *(("--python", python_option) if python_option else ()), "--yes")
        lines += ["", "Run them and check again:", f"  {render(yes, windows=installer.windows)}"]
    return "\n".join(lines) + "\n"


def render_result(before: Report, after: Report | None, failed: str | None) -> str:
    """After ``--yes``: what the second check found, or which command failed."""
    if failed is not None:
        return f"ortdoctor fix: stopped: {failed}\nNothing after it ran; the environment may be half-changed.\n"
    if after is None:
        return ""
    from ortdoctor.report.short import render as render_short

    gone = sorted({f.id for f in before.findings} - {f.id for f in after.findings})
    lines = ["", "Checked again:"]
    if gone:
        lines.append(f"fixed: {', '.join(gone)}")
    return "\n".join(lines) + "\n" + render_short(after)

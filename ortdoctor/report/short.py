"""The short report (`ortdoctor check --quiet`, the pytest header): the verdict line and each problem's fix.

An ok verdict is one line. Otherwise every error and warning follows as its title, id and fix, so a
health check's log or a CI job's output says what is wrong and what to run without the whole report.
Notes (severity ``info``) are left out. Returns a string; the caller prints it.
"""

from __future__ import annotations

from ortdoctor.core.facts import Finding
from ortdoctor.core.terminal import terminal_safe
from ortdoctor.report import text
from ortdoctor.report.model import Report

__all__ = ["problems", "render", "verdict_line"]

_MARK = {"error": "✘", "warning": "⚠"}


def verdict_line(report: Report, *, color: bool = False) -> str:
    """The first line of the human report, the same words in both (it sums up every finding)."""
    return text.verdict_line(report, color=color)


def problems(report: Report) -> list[Finding]:
    """The errors, then the warnings, in the diagnosis' order within each."""
    return ([f for f in report.findings if f.severity == "error"]
            + [f for f in report.findings if f.severity == "warning"])


def render(report: Report, *, color: bool = False) -> str:
    lines = [verdict_line(report, color=color)]
    for f in problems(report):
        lines.append(f"{_MARK[f.severity]} {f.title}  [{f.id}]")
        if f.fix:  # a fix names paths: shown, not obeyed
            first, *rest = terminal_safe(f.fix, multiline=True).splitlines()
            lines.append(f"    fix: {first}")
            lines += [f"         {line}" for line in rest]
    return "\n".join(lines) + "\n"

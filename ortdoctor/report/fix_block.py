"""The report's first fix block: every error's and warning's package steps merged, as ``ortdoctor fix`` runs
them (:func:`ortdoctor.decide.fix_plan.plan_fix`), for the text, markdown and JSON reports alike."""

from __future__ import annotations

from ortdoctor.core.facts import Finding
from ortdoctor.core.record import record
from ortdoctor.core.shell import Command, render_all
from ortdoctor.decide.fix_plan import FixPlan, plan_fix
from ortdoctor.decide.fixes import Installer
from ortdoctor.report.model import Report

__all__ = ["FirstFix", "first_fix"]


@record
class FirstFix:
    """The report's first fix block: every package finding's steps merged, exactly as ``ortdoctor fix``
    merges and runs them, so one paste fixes them all in one round."""

    plan: FixPlan
    installer: Installer
    commands: tuple[Command, ...]

    @property
    def shown(self) -> bool:
        """Printed as a block of its own where it covers more than one finding (else the finding's own fix
        is the same commands)."""
        return bool(self.commands) and len(self.plan.fixed) > 1

    def covers(self, f: Finding) -> bool:
        return self.shown and f in self.plan.fixed

    def text(self) -> str:
        return "\n".join(render_all(self.commands, windows=self.installer.windows))

    def to_json(self) -> dict[str, object]:
        return {"findings": [f.id for f in self.plan.fixed],
                "commands": [c.to_json(windows=self.installer.windows) for c in self.commands],
                "text": self.text()}


def first_fix(report: Report) -> FirstFix:
    installer = Installer.of(report.env.python)
    plan = plan_fix(report.findings, windows=installer.windows)
    return FirstFix(plan, installer, plan.lines(installer))

"""The report's first fix block: every error's and warning's package steps merged, as ``ortdoctor fix`` runs
them (:func:`ortdoctor.decide.fix_plan.plan_fix`), for the text, markdown and JSON reports alike."""

from __future__ import annotations

from ortdoctor.core.facts import Finding
from ortdoctor.core.record import record
from ortdoctor.core.shell import Command, compose
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
    note: str = ""  # a pixi or poetry project's own command for the same change (a comment after the commands)

    @property
    def shown(self) -> bool:
        """Printed as a block of its own where it covers more than one finding (else the finding's own fix
        is the same commands)."""
        return bool(self.commands) and len(self.plan.fixed) > 1

    def covers(self, f: Finding) -> bool:
        return self.shown and f in self.plan.fixed

    def prose(self, f: Finding, prose: list[str]) -> list[str]:
        """``f``'s prose lines as shown under it: where the block covers it, without its own project note
        (the block's note names the merged change once)."""
        if not self.covers(f) or not self.note:
            return prose
        own = self.installer.manager_note(f.steps)
        return [line for line in prose if line != own]

    def text(self) -> str:
        """The block to paste: the commands, one a line, then the note as a comment (never in a command line)."""
        return compose(self.commands, self.note, windows=self.installer.windows) if self.commands else ""

    def to_json(self) -> dict[str, object]:
        return {"findings": [f.id for f in self.plan.fixed],
                "commands": [c.to_json(windows=self.installer.windows) for c in self.commands],
                "text": self.text(), **({"note": self.note} if self.note else {})}


def first_fix(report: Report) -> FirstFix:
    installer = Installer.of(report.env.python)
    plan = plan_fix(report.findings, windows=installer.windows)
    return FirstFix(plan, installer, plan.lines(installer), plan.note(installer))

"""`ortdoctor fix`'s plan: the package steps of every finding, merged into the fewest pip commands.

Pure: findings in, a :class:`FixPlan` out. The steps come from the findings themselves (each built by
:mod:`ortdoctor.decide.fixes`), so what ``fix`` runs is exactly what ``check`` prints, merged:

* every uninstall first, in one command, so a package that one finding removes and another reinstalls
  ends up installed;
* then one install per distinct set of options (``--force-reinstall --no-deps`` must not spread to the
  specs of another finding), each spec once, in the order the findings gave them.

Notes (severity ``info``) are not fixed: they describe, they do not break anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ortdoctor.core.facts import Finding, PackageStep

__all__ = ["FixPlan", "plan_fix"]


@dataclass(frozen=True)
class FixPlan:
    steps: tuple[PackageStep, ...]  # what to run, in order
    fixed: tuple[Finding, ...]  # the findings whose fix is these steps
    manual: tuple[Finding, ...]  # errors and warnings whose fix is not a package command

    @property
    def empty(self) -> bool:
        return not self.steps


def _split(step: PackageStep) -> tuple[tuple[str, ...], tuple[str, ...]]:
    options = tuple(a for a in step.args if a.startswith("-"))
    specs = tuple(a for a in step.args if not a.startswith("-"))
    return options, specs


def plan_fix(findings: Iterable[Finding]) -> FixPlan:
    order = {"error": 0, "warning": 1}
    relevant = sorted((f for f in findings if f.severity in order), key=lambda f: order[f.severity])
    uninstall_options: list[str] = []
    uninstall: list[str] = []
    installs: dict[tuple[str, ...], list[str]] = {}
    fixed: list[Finding] = []
    manual: list[Finding] = []
    for finding in relevant:
        if not finding.steps:
            if finding.fix:
                manual.append(finding)
            continue
        fixed.append(finding)
        for s in finding.steps:
            options, specs = _split(s)
            if s.verb == "uninstall":
                uninstall_options += [o for o in options if o not in uninstall_options]
                uninstall += [p for p in specs if p not in uninstall]
            else:
                group = installs.setdefault(options, [])
                group += [p for p in specs if p not in group]
    steps: list[PackageStep] = []
    if uninstall:
        steps.append(PackageStep("uninstall", (*uninstall_options, *uninstall)))
    # plain installs first: a forced reinstall of one file set is the last word on that package
    for options in sorted(installs, key=len):
        if installs[options]:
            steps.append(PackageStep("install", (*options, *installs[options])))
    return FixPlan(tuple(steps), tuple(fixed), tuple(manual))

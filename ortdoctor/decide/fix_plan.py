"""`ortdoctor fix`'s plan: the package steps of every finding, merged into the fewest pip commands.

Pure: findings in, a :class:`FixPlan` out. The steps come from the findings themselves (each built by
:mod:`ortdoctor.decide.fixes`), so what ``fix`` runs is exactly what ``check`` prints, merged:

* every uninstall first, in one command, so a package that one finding removes and another reinstalls
  ends up installed;
* directories pip does not manage (a ``--target`` copy) are moved into a backup folder before any pip
  command, with ``mkdir``/``mv`` argument vectors;
* then one install per distinct set of options (``--force-reinstall --no-deps`` must not spread to the
  specs of another finding), each spec once, in the order the findings gave them.

Notes (severity ``info``) are not fixed: they describe, they do not break anything.

Given the driver (its version and OS), the plan also says when the driver must be updated first: every
CUDA major its installs would bring needs a newer driver than the one shown (:func:`driver_first`, which
``explain`` asks of the fixes it prints as well).
"""

from __future__ import annotations

from collections.abc import Iterable

from ortdoctor.core.facts import Finding, PackageStep
from ortdoctor.core.record import record
from ortdoctor.core.severity import severity_rank
from ortdoctor.core.shell import Command, move_argvs
from ortdoctor.decide.fixes import DriverGate, Installer, driver_gate, spec_cuda_major
from ortdoctor.decide.matrix.model import Matrix

__all__ = ["FixPlan", "driver_first", "plan_fix"]


@record
class FixPlan:
    steps: tuple[PackageStep, ...]  # what to run, in order
    fixed: tuple[Finding, ...]  # the findings whose fix is these steps (and moves)
    manual: tuple[Finding, ...]  # errors and warnings whose fix is not a package command
    moves: tuple[Command, ...] = ()  # directories pip does not manage, moved aside first (--target copies)
    driver: DriverGate | None = None  # the driver runs not every CUDA major the installs bring (driver_first)

    @property
    def empty(self) -> bool:
        return not self.steps and not self.moves

    def lines(self, installer: Installer) -> tuple[Command, ...]:
        """The plan as the command lines the report and ``fix`` print: the moves, then pip."""
        return (*self.moves, *installer.lines(self.steps))

    def note(self, installer: Installer) -> str:
        """For a pixi or poetry environment, once for the whole plan: the same change as the project's own
        command, without which the next ``pixi install`` / ``poetry sync`` puts the packages back."""
        return installer.manager_note(self.steps)

    def argvs(self, installer: Installer) -> list[list[str]]:
        """What ``fix --yes`` runs: the same lines as argument vectors (a move is ``mkdir``, then ``mv``)."""
        return [*(argv for m in self.moves for argv in move_argvs(m)), *installer.argvs(self.steps)]


def _split(step: PackageStep) -> tuple[tuple[str, ...], tuple[str, ...]]:
    options = tuple(a for a in step.args if a.startswith("-"))
    specs = tuple(a for a in step.args if not a.startswith("-"))
    return options, specs


def driver_first(matrix: Matrix, steps: Iterable[PackageStep], driver: str | None,
                 os_name: str | None, *, cuda_majors: Iterable[int] = ()) -> DriverGate | None:
    """The CUDA majors the install steps bring (an ``onnxruntime-gpu`` pin, NVIDIA wheels), and ``cuda_majors``
    that a fix names in prose (a system CUDA install), checked against ``driver`` on ``os_name``: None when the
    driver is unknown or runs them all; else which it cannot run (``none_runs``: not one of them, so updating
    the driver comes before any of these steps)."""
    majors = [*cuda_majors] + [m for s in steps if s.verb == "install" for spec in _split(s)[1]
              if (m := spec_cuda_major(matrix, spec)) is not None]
    return driver_gate(matrix, driver, os_name, majors)


def plan_fix(findings: Iterable[Finding], *, windows: bool = False, matrix: Matrix | None = None,
             driver: str | None = None, os_name: str | None = None) -> FixPlan:
    """``windows``: a move is left to the user (``fix --yes`` runs ``mkdir``/``mv`` on POSIX only).
    ``matrix``, ``driver``, ``os_name``: the driver the steps are checked against (:func:`driver_first`)."""
    # notes (info) have nothing to fix
    relevant = sorted((f for f in findings if f.severity != "info"), key=lambda f: severity_rank(f.severity))
    uninstalls: dict[str | None, tuple[list[str], list[str]]] = {}  # interpreter -> (options, names)
    installs: dict[tuple[str | None, tuple[str, ...]], list[str]] = {}
    moves: list[Command] = []
    fixed: list[Finding] = []
    manual: list[Finding] = []
    for finding in relevant:
        own_moves = [c for c in finding.commands if c.kind == "move"]
        if not finding.steps and (windows or not own_moves):
            if finding.fix:
                manual.append(finding)
            continue
        fixed.append(finding)
        moves += [m for m in own_moves if m not in moves]
        for s in finding.steps:
            options, specs = _split(s)
            if s.verb == "uninstall":
                opts, names = uninstalls.setdefault(s.python, ([], []))
                opts += [o for o in options if o not in opts]
                names += [p for p in specs if p not in names]
            else:
                group = installs.setdefault((s.python, options), [])
                group += [p for p in specs if p not in group]
    steps: list[PackageStep] = []
    # another interpreter's removal (a --user copy) first: it is the one the next check would still see
    for python in sorted(uninstalls, key=lambda p: p is None):
        opts, names = uninstalls[python]
        if names:
            steps.append(PackageStep("uninstall", (*opts, *names), python))
    # plain installs first: a forced reinstall of one file set is the last word on that package
    for python, options in sorted(installs, key=lambda k: len(k[1])):
        if installs[(python, options)]:
            steps.append(PackageStep("install", (*options, *installs[(python, options)]), python))
    gate = driver_first(matrix, steps, driver, os_name) if matrix is not None else None
    return FixPlan(tuple(steps), tuple(fixed), tuple(manual), tuple(moves), gate)

"""`ortdoctor fix`: show the package commands that fix what `check` finds; run them only with --yes.

The plan goes to stdout; pip's own output (with --yes) goes to stderr. Exit codes: 0 when nothing is left
to fix (after --yes: the second check has no error), 1 otherwise or when a command failed, 2 for bad input.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from ortdoctor.core import exitcodes


def _usage_error(message: str) -> None:
    click.echo(f"ortdoctor: error: {message}", err=True)
    sys.exit(exitcodes.USAGE)


@click.command("fix", help="Show the pip commands that fix what `ortdoctor check` finds, for the inspected "
               "interpreter, merged into the fewest commands. With --yes, run them and check again.")
@click.option("--yes", "-y", is_flag=True, help="Run the commands (through the inspected interpreter), then check "
              "again and say what is left.")
@click.option("--python", "python_path", type=click.Path(dir_okay=False), default=None, metavar="PATH",
              help="Fix this interpreter's environment (as pip --python does).")
@click.option("--no-smoke", is_flag=True, help="Decide from inspection only (no smoke session, before or after).")
@click.option("--matrix", "matrix_file", type=click.Path(dir_okay=False), default=None,
              help="Compatibility matrix file (default: $ORTDOCTOR_MATRIX or the shipped one).")
def command(yes: bool, python_path: str | None, no_smoke: bool, matrix_file: str | None) -> None:
    from ortdoctor.decide.matrix.model import MatrixError
    from ortdoctor.doctor.check import CheckOptions, run_check
    from ortdoctor.doctor.fix import apply_fix, plan_for
    from ortdoctor.report.fix import render_plan, render_result

    interpreter = None
    if python_path is not None:
        from ortdoctor.probes.interpreter import InterpreterError, describe

        try:
            interpreter = describe(python_path)
        except InterpreterError as exc:
            _usage_error(str(exc))
    options = CheckOptions(matrix_path=matrix_file, python=interpreter, smoke=False if no_smoke else "auto")
    try:
        before = run_check(options)
    except MatrixError as exc:
        _usage_error(f"bad matrix file: {exc}")
        return
    plan, installer = plan_for(before)
    click.echo(render_plan(before, plan, installer, python_option=python_path, ortdoctor_python=sys.executable),
               nl=False)
    if not yes or plan.empty:
        sys.exit(exitcodes.FAIL if before.verdict == "fail" else exitcodes.OK)

    from ortdoctor.core.shell import posix_join, powershell_join

    join = powershell_join if installer.windows else posix_join

    def announce(argv: Sequence[str]) -> None:
        click.echo(f"\n$ {join(argv)}", err=True)

    result = apply_fix(options, before, log=sys.stderr, on_step=announce)
    failed = result.failed_step
    reason = None
    if failed is not None:
        words = join(failed.argv)
        reason = f"{words} failed ({failed.error or f'exit {failed.returncode}'})"
    click.echo(render_result(before, result.after, reason), nl=False)
    if failed is not None or result.after is None or result.after.verdict == "fail":
        sys.exit(exitcodes.FAIL)
    sys.exit(exitcodes.OK)

"""The `ortdoctor` console command and `python -m ortdoctor`.

`ortdoctor check` is what people run most, and what a health check or a CI step runs on every start, so
its plain form skips click: ``check`` followed by options that :mod:`ortdoctor.cli.check_argv` parses
exactly as click would runs :func:`ortdoctor.cli.check_run.execute` directly. Anything else (another
command, ``--help``, a usage error, shell completion) goes to the click group (:mod:`ortdoctor.cli.main`),
which says the same as before in the same words. click, with what it imports (``gettext``, ``datetime``,
``uuid`` ...), is ~20 ms of a ``check --no-smoke`` on a 2-core machine.

When the command is done, the process ends without the interpreter's teardown (see :func:`_exit`).
This module and what it imports before dispatching must not import click.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable

from ortdoctor.cli.crash import INTERRUPTED, reporting_crashes
from ortdoctor.core import exitcodes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

__all__ = ["main"]

# Set to anything non-empty to end through the interpreter's own teardown (tests; tools that hook the exit
# in a way _fast_exit_safe does not see).
NO_FAST_EXIT = "ORTDOCTOR_NO_FAST_EXIT"
# click's shell completion asks through this variable (click.Command.main, prog_name "ortdoctor")
_COMPLETE_VAR = "_ORTDOCTOR_COMPLETE"


def main() -> NoReturn:
    """Console entry point: `ortdoctor ARGS...` (sys.argv). Never returns."""
    from ortdoctor.cli.console import make_streams_safe

    args = sys.argv[1:]
    if args[:1] == ["check"]:
        # A check lives for a fraction of a second, or waits on its children: the cyclic collector's ~30
        # passes over young objects cost ~4% of it (12 M of 300 M instructions, callgrind) and would free
        # next to nothing, since the records, tuples and dicts it makes are freed by reference counting.
        gc.disable()
    make_streams_safe()
    try:
        reporting_crashes(lambda: _dispatch(args), debug="--debug" in args)
        code: Any = None  # a click command that returned: click's own ctx.exit() is 0
    except SystemExit as exc:
        code = exc.code
    _exit(code)


def _dispatch(args: list[str]) -> Any:
    if args[:1] == ["check"] and not os.environ.get(_COMPLETE_VAR):
        from ortdoctor.cli.check_argv import parse

        params = parse(args[1:])
        if params is not None:
            from ortdoctor.cli.check_run import execute

            sys.exit(_as_click_runs_it(lambda: execute(**params)))
    from ortdoctor.cli.main import run_click

    return run_click(args)


def _as_click_runs_it(command: Callable[[], int]) -> int:
    """``command()`` with what ``click.Command.main(standalone_mode=True)`` does around a command: Ctrl-C
    (or EOF) prints a blank line and "Aborted!" and exits 1; a broken pipe exits 1 quietly, its streams
    wrapped so that the final flush cannot complain. Everything else passes, as through click."""
    try:
        return command()
    except (EOFError, KeyboardInterrupt):
        try:
            _to_stderr("\n")  # click: the blank line closes the terminal's ^C echo
            _to_stderr("Aborted!\n")
        except (EOFError, KeyboardInterrupt):  # click: a second interrupt now loses the message, not the code
            pass
        return 1
    except OSError as exc:
        import errno

        if exc.errno != errno.EPIPE:
            raise
        sys.stdout = _PacifyFlush(sys.stdout)
        sys.stderr = _PacifyFlush(sys.stderr)
        return 1


def _to_stderr(text: str) -> None:
    # click writes these to sys.stderr itself (echo(file=sys.stderr)), not through its wrapped stream
    if sys.stderr is not None:
        sys.stderr.write(text)
        sys.stderr.flush()


class _PacifyFlush:
    """A stream whose flush ignores a broken pipe (click's _PacifyFlushWrapper): the interpreter flushes
    stdout and stderr as it ends."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def flush(self) -> None:
        try:
            self.wrapped.flush()
        except OSError as exc:
            import errno

            if exc.errno != errno.EPIPE:
                raise

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.wrapped, attr)


def _exit(code: Any) -> NoReturn:
    """End the process with ``code`` as ``sys.exit(code)`` would, skipping the interpreter's teardown where
    nothing is left for it to do.

    Tearing down the ~180 modules a check imports takes ~12-16 ms on a 2-core machine, and nothing needs
    it: the report is written and flushed, the children have been waited for. What the teardown would
    still do is done here: wait for threads (where one is still running, the teardown runs as usual; the
    exit hooks of ``threading`` and ``concurrent.futures`` only join threads), run the atexit callbacks
    (temporary directories, logging) and flush stdout and stderr, before and after them. Anything unusual
    (a code that is not a small int, a crash, a stream that failed or was replaced, a tracer or profiler,
    ``python -i``, ``ORTDOCTOR_NO_FAST_EXIT``) leaves the exit to the interpreter, which then behaves
    exactly as before.
    """
    if code is None:
        code = 0
    if not _fast_exit_safe(code):
        sys.exit(code)
    import atexit

    atexit._run_exitfuncs()  # the callbacks are cleared after they run: the fallback below does not repeat them
    if not _flushed():
        sys.exit(code)
    os._exit(code)


def _fast_exit_safe(code: Any) -> bool:
    if os.environ.get(NO_FAST_EXIT) or os.environ.get("PYTHONINSPECT") or sys.flags.inspect:
        return False
    # A str (or other) code is the interpreter's to print. After a crash or an interrupt (a write to a full
    # disk among them) the teardown's own flush says what it always said: not worth being quick there.
    if type(code) is not int or not 0 <= code <= 255 or code in (exitcodes.CRASH, INTERRUPTED):
        return False
    if sys.gettrace() is not None or sys.getprofile() is not None:  # coverage, pdb, cProfile write at exit
        return False
    # click replaces a stream after a broken pipe; the interpreter's teardown is what handles that
    if sys.stdout is not sys.__stdout__ or sys.stderr is not sys.__stderr__:
        return False
    threading = sys.modules.get("threading")
    if threading is not None:
        main_thread = threading.main_thread()
        if any(t is not main_thread and not t.daemon and t.is_alive() for t in threading.enumerate()):
            return False  # the interpreter waits for it
    return _flushed()


def _flushed() -> bool:
    """Flush stdout and stderr as the interpreter's teardown would; False if either fails (the teardown
    then fails the same way, and reports it as it always has)."""
    for stream in (sys.stdout, sys.stderr):
        if stream is None:
            continue
        try:
            stream.flush()
        except Exception:
            return False
    return True

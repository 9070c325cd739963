"""What the user sees when ortdoctor itself fails: one line and exit code 3, never a traceback unless
``--debug``. Shared by both console entries (:mod:`ortdoctor.cli.entry`, :mod:`ortdoctor.cli.main`); click-free."""

from __future__ import annotations

import sys
from collections.abc import Callable

from ortdoctor._version import __version__
from ortdoctor.cli.echo import echo
from ortdoctor.core import exitcodes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn, TypeVar

__all__ = ["INTERRUPTED", "reporting_crashes"]

if TYPE_CHECKING:
    T = TypeVar("T")

INTERRUPTED = 130  # the shell's code for SIGINT (128 + 2)


def reporting_crashes(run: Callable[[], T], *, debug: bool) -> T:
    """``run()``; a KeyboardInterrupt that reaches here exits 130, any other exception is a bug in ortdoctor:
    say so and where to report it, and exit 3 (with ``debug``, the traceback instead). SystemExit passes."""
    try:
        return run()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        echo("ortdoctor: interrupted", err=True)
        sys.exit(INTERRUPTED)
    except Exception as exc:  # a bug in ortdoctor: say so, say where to report it, exit 3
        _report(exc, debug=debug)


def _report(exc: Exception, *, debug: bool) -> NoReturn:
    if debug:
        import traceback  # only on this path: it costs ~8 ms to import

        traceback.print_exc()
    else:
        echo(
            f"ortdoctor: internal error: {type(exc).__name__}: {exc}\n"
            f"This is a bug in ortdoctor {__version__}. Run again with --debug for the traceback and "
            f"report it at {exitcodes.BUG_REPORT_URL}",
            err=True,
        )
    sys.exit(exitcodes.CRASH)

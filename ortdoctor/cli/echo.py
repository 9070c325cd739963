"""``click.echo`` for the click-free path of ``ortdoctor check`` (:mod:`ortdoctor.cli.entry`).

It writes exactly what ``click.echo(message, err=err, nl=nl)`` writes. Where the two plainly agree (a text
stream, not on Windows, in an encoding other than ASCII, a message without escape sequences) it writes
and flushes the stream itself; anywhere else it hands the message to click, which is imported only then:
click re-wraps an ASCII stream as UTF-8, strips colour codes where the stream is not a terminal and
writes to the Windows console through its own stream.
"""

from __future__ import annotations

import codecs
import io
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["echo"]


def _plain(stream: Any, out: str) -> bool:
    """Whether ``click.echo`` would write ``out`` to ``stream`` unchanged, with one write and a flush."""
    if sys.platform.startswith("win") or "\x1b" in out or not isinstance(stream, io.TextIOBase):
        return False
    encoding = getattr(stream, "encoding", None)
    if not encoding or getattr(stream, "errors", None) is None:
        return False
    try:
        return codecs.lookup(encoding).name != "ascii"
    except LookupError:  # click keeps a stream whose encoding it cannot look up
        return True


def echo(message: str, *, err: bool = False, nl: bool = True) -> None:
    """``click.echo(message, err=err, nl=nl)`` without importing click where it is not needed."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:  # no stream to write to (pythonw): click writes nothing either
        return
    out = message + "\n" if nl else message
    if not _plain(stream, out):
        import click

        click.echo(message, err=err, nl=nl)
        return
    if out:
        stream.write(out)
    stream.flush()

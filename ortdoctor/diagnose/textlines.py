"""The lines of a pasted text or a piped log, read lazily and bounded, as the classifier wants them.

* Every line is read, however long the log: the text is walked with ``str.find`` (a stream with
  ``readline``), never split into one big list, so memory stays flat.
* A line is read in windows of :data:`MAX_LINE` characters that overlap by :data:`OVERLAP`, so a
  message in the middle of a megabyte-long line is still seen and no regular expression runs over
  more than a window.
* Colour codes are removed, and a line of UTF-16 text that a console turned into spaced-out
  characters (``L o a d L i b r a r y``) is put back together.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ortdoctor.formats.ortlog import strip_ansi

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO

__all__ = ["MAX_LINE", "OVERLAP", "iter_lines", "iter_stream", "normalise", "windows"]

MAX_LINE = 16 * 1024
OVERLAP = 512
_READ = 64 * 1024  # a stream is read in blocks of this size


def iter_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` (``\\n``, ``\\r\\n`` or a lone ``\\r`` end one), one at a time."""
    pos, end = 0, len(text)
    while pos < end:
        nl = text.find("\n", pos)
        stop = end if nl < 0 else nl
        segment = text[pos:stop]
        if "\r" in segment:
            yield from (part for part in segment.split("\r") if part)
        else:
            yield segment
        pos = stop + 1


def iter_stream(stream: IO[str] | IO[bytes], *, encoding: str = "utf-8") -> Iterator[str]:
    """The lines of a text or binary stream, read in bounded blocks (a line longer than a block comes
    in pieces, which :func:`windows` would cut anyway)."""
    pending = ""
    while True:
        block = stream.read(_READ)
        if not block:
            break
        chunk = block.decode(encoding, "replace") if isinstance(block, bytes) else block
        pending += chunk
        *complete, pending = pending.split("\n")
        for line in complete:
            yield from iter_lines(line)
        if len(pending) > MAX_LINE * 4:  # one enormous line: hand it on in windows' worth
            yield pending
            pending = ""
    if pending:
        yield from iter_lines(pending)


def windows(line: str) -> Iterable[str]:
    """``line`` itself, or overlapping windows of it when it is longer than :data:`MAX_LINE`."""
    if len(line) <= MAX_LINE:
        return (line,)
    step = MAX_LINE - OVERLAP
    return (line[i : i + MAX_LINE] for i in range(0, len(line) - OVERLAP, step))


def normalise(line: str) -> str:
    """Colour codes and NULs removed; spaced-out UTF-16 text put back together."""
    if "\x1b" in line:
        line = strip_ansi(line)
    if "\x00" in line:
        line = line.replace("\x00", "")
    return _despace(line)


def _despace(line: str) -> str:
    """``L o a d L i b r a r y   f a i l e d`` -> ``LoadLibrary failed``: a UTF-16 log shown as 8-bit
    text has a space after every character. Only a line where nearly every second character is a space
    (and that has enough of them) is touched."""
    if len(line) < 24 or line.count(" ") * 2 < len(line) - 4:
        return line
    for start in (0, 1):
        odd = line[start + 1 :: 2]
        if odd and odd.count(" ") >= 0.95 * len(odd):
            return line[start::2]
    return line

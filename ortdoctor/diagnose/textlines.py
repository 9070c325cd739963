"""The lines of a pasted text or a piped log, read lazily and bounded, as the classifier wants them.

* Every line is read, however long the log: the text is walked with ``str.find`` (a stream with
  ``readline``), never split into one big list, so memory stays flat.
* A line is read in windows of :data:`MAX_LINE` characters that overlap by :data:`OVERLAP`, so a
  message in the middle of a megabyte-long line is still seen and no regular expression runs over
  more than a window.
* What copy-paste did to a line is undone by :mod:`.text_normalise` (colour codes, typographic quotes,
  Markdown debris, mojibake, Windows code pages, UTF-16 shown as spaced-out characters).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ortdoctor.diagnose.text_normalise import decode_line, normalise_line

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
    in pieces, which :func:`windows` would cut anyway). A binary stream is decoded line by line
    (:func:`.text_normalise.decode_line`), so a line in a Windows code page does not spoil the rest."""
    pending: str | bytes = ""
    while True:
        block = stream.read(_READ)
        if not block:
            break
        if isinstance(block, bytes):
            data = (pending if isinstance(pending, bytes) else pending.encode(encoding)) + block
            *done, pending = data.split(b"\n")
            for raw in done:
                yield from _lines_of(_decode(raw, encoding))
        else:
            text = (pending.decode(encoding, "replace") if isinstance(pending, bytes) else pending) + block
            *complete, pending = text.split("\n")
            for line in complete:
                yield from _lines_of(line)
        if len(pending) > MAX_LINE * 4:  # one enormous line: hand it on in windows' worth
            yield pending.decode(encoding, "replace") if isinstance(pending, bytes) else pending
            pending = b"" if isinstance(pending, bytes) else ""
    if pending:
        yield from iter_lines(_decode(pending, encoding) if isinstance(pending, bytes) else pending)


def _lines_of(line: str) -> Iterator[str]:
    """A line of a stream, kept when blank: evidence names lines by number, as the pasted text has them."""
    if line:
        yield from iter_lines(line)
    else:
        yield ""


def _decode(raw: bytes, encoding: str) -> str:
    return decode_line(raw) if encoding.lower().replace("-", "") == "utf8" else raw.decode(encoding, "replace")


def windows(line: str) -> Iterable[str]:
    """``line`` itself, or overlapping windows of it when it is longer than :data:`MAX_LINE`."""
    if len(line) <= MAX_LINE:
        return (line,)
    step = MAX_LINE - OVERLAP
    return (line[i : i + MAX_LINE] for i in range(0, len(line) - OVERLAP, step))


def normalise(line: str) -> str:
    """:func:`.text_normalise.normalise_line`: what copy-paste did to the line, undone."""
    return normalise_line(line)

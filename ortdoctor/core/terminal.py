"""Text from elsewhere made safe to print on a terminal.

ortdoctor prints text it did not write: a log line a user pasted (``explain``), what a node of a fleet
put in its report (titles, fixes, host names, paths), an error a child process printed, a file name.
A terminal obeys the control characters in such text: an escape sequence can set the window title,
write the clipboard (OSC 52), move the cursor to overwrite what ortdoctor printed, or hide text; a
bidi override shows characters in another order than they are. :func:`terminal_safe` shows each of
them as a visible escape (``\\x1b``, ``\\u202e``) instead, so the whole sequence is read, not obeyed.

:data:`ESCAPE_SEQUENCE` matches every kind of escape sequence (CSI, OSC ended by BEL or ST, DCS, SOS,
PM, APC, the two-character ones, and their 8-bit forms) for readers that drop them before matching
text (onnxruntime colours its log records on a terminal).

Standard library only (:mod:`re`): the smoke and model children load this through
:mod:`ortdoctor.formats.ortlog`.
"""

from __future__ import annotations

import re

__all__ = ["ESCAPE_SEQUENCE", "strip_escapes", "terminal_safe"]

#: Every escape sequence, whole. String sequences (OSC ``ESC ]``, DCS ``ESC P``, SOS ``ESC X``, PM ``ESC ^``,
#: APC ``ESC _``) end at BEL or ST (``ESC \\``, 8-bit ``\\x9c``); one never ended stops at the end of its
#: line, so a stray introducer cannot swallow the rest of a log.
ESCAPE_SEQUENCE = re.compile(
    r"[\x1b\x90\x98\x9b\x9d-\x9f](?:"  # one introducer, then by its kind:
    r"(?<=\x1b)\[[0-?]*[ -/]*[@-~]|(?<=\x9b)[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erasing
    r"|(?:(?<=\x1b)[\]PX^_]|(?<=[\x90\x98\x9d-\x9f]))[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # OSC DCS SOS PM APC
    r"|(?<=\x1b)[ -/]*[0-~]"  # the rest: ESC c (reset), ESC ( B (character set), ESC 7 ...
    r")"
)

# C0 controls but tab and newline, DEL, C1 controls, and the bidi embeddings, overrides and isolates
# (U+202A..U+202E, U+2066..U+2069) that reorder what a terminal shows.
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_KEEP_NEWLINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _visible(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: object, *, multiline: bool = False) -> str:
    """``text`` (``str()`` of it) with every control character shown as ``\\xNN`` / ``\\uNNNN``: C0 and C1
    controls, DEL, ESC (so no escape sequence of any kind is obeyed) and bidi overrides. A tab stays;
    a newline stays only with ``multiline`` (a carriage return never: it would overwrite the line)."""
    s = text if isinstance(text, str) else str(text)
    pattern = _UNSAFE_KEEP_NEWLINES if multiline else _UNSAFE
    if pattern.search(s) is None:  # the common case: nothing to do, no copy
        return s
    return pattern.sub(_visible, s)


def strip_escapes(text: str) -> str:
    """``text`` without its escape sequences (the characters between them stay)."""
    if text.isascii() and "\x1b" not in text:  # the common case, at a fraction of the pattern's cost
        return text
    return ESCAPE_SEQUENCE.sub("", text)

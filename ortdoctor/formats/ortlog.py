"""onnxruntime's log text: colour codes and its own log records (``[E:onnxruntime:...]``).

Imports nothing but :mod:`re` and :mod:`ortdoctor.core.terminal` (itself only :mod:`re`): the smoke and
model children load it, and their start-up is measured.
"""

from __future__ import annotations

from ortdoctor.core.terminal import ESCAPE_SEQUENCE, strip_escapes

__all__ = ["ANSI", "ort_log_lines", "strip_ansi"]

#: Terminal escape sequences of every kind (ORT colours its log records on a terminal; a log pasted from
#: elsewhere may hold any other: window titles, clipboard writes, DCS strings).
ANSI = ESCAPE_SEQUENCE

_SEVERE = ("[E:onnxruntime", "[W:onnxruntime", "[F:onnxruntime")
_INFO = ("[I:onnxruntime", "[V:onnxruntime")


def strip_ansi(text: str) -> str:
    return strip_escapes(text)


def ort_log_lines(stderr: str, *, include_info: bool = False) -> list[str]:
    """ORT's own log records (errors, warnings and fatal; info and verbose too when asked), escape
    sequences removed, stripped."""
    keep = _SEVERE + _INFO if include_info else _SEVERE
    return [line.strip() for line in strip_ansi(stderr).splitlines() if any(k in line for k in keep)]

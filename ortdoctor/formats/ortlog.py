"""onnxruntime's log text: colour codes and its own log records (``[E:onnxruntime:...]``).

Imports nothing but :mod:`re`: the smoke and model children load it, and their start-up is measured.
"""

from __future__ import annotations

import re

__all__ = ["ANSI", "ort_log_lines", "strip_ansi"]

#: Terminal escape sequences (ORT colours its log records on a terminal).
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")

_SEVERE = ("[E:onnxruntime", "[W:onnxruntime", "[F:onnxruntime")
_INFO = ("[I:onnxruntime", "[V:onnxruntime")


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


def ort_log_lines(stderr: str, *, include_info: bool = False) -> list[str]:
    """ORT's own log records (errors, warnings and fatal; info and verbose too when asked), colour
    codes removed, stripped."""
    keep = _SEVERE + _INFO if include_info else _SEVERE
    return [line.strip() for line in strip_ansi(stderr).splitlines() if any(k in line for k in keep)]

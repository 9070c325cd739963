"""Output on consoles that are not UTF-8: a Windows console redirected to a file writes cp1252, some
containers run with LANG=C/latin-1. The reports use a few marks (✘ ⚠ ✔ · …) that those encodings lack;
rather than crash with UnicodeEncodeError, each is written as its ASCII equivalent and anything else
unencodable as ``?``."""

from __future__ import annotations

import codecs
import io
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["make_streams_safe"]

_ASCII = {"✘": "x", "⚠": "!", "✔": "ok", "ℹ": "i", "·": "-", "…": "...", "—": "-", "–": "-", "’": "'",
          "‘": "'", "“": '"', "”": '"', "•": "*", "→": "->", "≥": ">=", "≤": "<=", "×": "x"}
_HANDLER = "ortdoctor-ascii"


def _replace(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    bad = exc.object[exc.start:exc.end]
    return "".join(_ASCII.get(ch, "?") for ch in bad), exc.end


def _register() -> None:
    try:
        codecs.lookup_error(_HANDLER)
    except LookupError:
        codecs.register_error(_HANDLER, _replace)


def _needs_help(stream: Any) -> bool:
    encoding = getattr(stream, "encoding", None) or ""
    try:
        "✘⚠✔·…".encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return True
    return False


def make_streams_safe() -> None:
    """Reconfigure stdout and stderr, where their encoding cannot write the reports' marks, to write ASCII
    equivalents instead of raising."""
    _register()
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name, None)
        if stream is None or not _needs_help(stream):
            continue
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors=_HANDLER)

"""``textwrap.wrap`` and ``fill`` for the text report's one use of them (no long words broken, no break at
hyphens), without importing :mod:`textwrap`.

``textwrap`` compiles its word-splitting patterns when it is imported, ~1 ms of a ``check`` on a 2-core
machine, for greedy wrapping at spaces. This is the same algorithm for those settings, step for step
(``tests/test_wrap.py`` compares the two on generated text).
"""

from __future__ import annotations

__all__ = ["fill", "wrap"]

# textwrap's whitespace: each of these characters becomes a space before splitting
_WHITESPACE = "\t\n\x0b\x0c\r "
_TO_SPACE = str.maketrans(_WHITESPACE, " " * len(_WHITESPACE))


def wrap(text: str, width: int, initial_indent: str = "", subsequent_indent: str = "",
         break_long_words: bool = False) -> list[str]:
    """``textwrap.wrap(text, width, initial_indent=..., subsequent_indent=..., break_long_words=...,
    break_on_hyphens=False)``; where a word is longer than its line and may be broken, textwrap itself
    does it."""
    if width <= 0:
        raise ValueError(f"invalid width {width!r} (must be > 0)")
    chunks = _chunks(text.expandtabs(8).translate(_TO_SPACE))
    chunks.reverse()
    lines: list[str] = []
    while chunks:
        indent = subsequent_indent if lines else initial_indent
        room = width - len(indent)
        if lines and chunks[-1].strip() == "":  # a line after the first does not start with spaces
            del chunks[-1]
        line: list[str] = []
        size = 0
        while chunks and size + len(chunks[-1]) <= room:
            size += len(chunks[-1])
            line.append(chunks.pop())
        if chunks and len(chunks[-1]) > room:
            if break_long_words:
                import textwrap

                return textwrap.wrap(text, width, initial_indent=initial_indent, subsequent_indent=subsequent_indent,
                                     break_on_hyphens=False)
            if not line:
                line.append(chunks.pop())  # a word longer than the line stands alone, unbroken
        if line and line[-1].strip() == "":
            del line[-1]
        if line:
            lines.append(indent + "".join(line))
    return lines


def fill(text: str, width: int, initial_indent: str = "", subsequent_indent: str = "",
         break_long_words: bool = False) -> str:
    """``textwrap.fill`` with the same settings as :func:`wrap`."""
    return "\n".join(wrap(text, width, initial_indent, subsequent_indent, break_long_words))


def _chunks(text: str) -> list[str]:
    """The words and the runs of spaces between them, in order: ``[c for c in re.split("( +)", text) if c]``."""
    out: list[str] = []
    spaces = 0
    for i, part in enumerate(text.split(" ")):
        spaces += i > 0  # one space stood before every part but the first
        if part:
            if spaces:
                out.append(" " * spaces)
                spaces = 0
            out.append(part)
    if spaces:
        out.append(" " * spaces)
    return out

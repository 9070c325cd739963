"""What copy-paste does to an error text, undone before any rule reads it.

A text reaches ``explain`` through a terminal, a chat window, a Markdown editor or a Windows console,
and each leaves its marks: typographic quotes and dashes (``‘CUDAExecutionProvider’``), colour codes,
Markdown debris (fences, ``>`` quote markers, a ``$`` prompt), UTF-8 shown as cp1252 or latin-1
(``canâ€™t``), bytes in a Windows code page (cp1252, GBK), UTF-16 shown as 8-bit text (a space after
every character), and lines a terminal wrapped at its width. This module is the one place that undoes
them: :func:`normalise_line` for a line of text, :func:`decode_line` for a line of bytes,
:func:`wrap_joiner` for how a wrapped line is put back together. Each step is cheap and leaves a
clean line unchanged.
"""

from __future__ import annotations

import re

from ortdoctor.formats.ortlog import strip_ansi

__all__ = ["decode_line", "normalise_line", "wrap_joiner"]

# Typographic punctuation a word processor, a chat window or a Markdown renderer puts in for ASCII.
_TYPOGRAPHIC = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u00b4": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2033": '"', "\u00ab": '"', "\u00bb": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-",
    "\u00a0": " ", "\u2007": " ", "\u202f": " ", "\u3000": " ",
    "\u200b": None, "\u200c": None, "\u200d": None, "\ufeff": None,
    "\uff08": "(", "\uff09": ")", "\uff1a": ":", "\uff0c": ",",  # full-width forms of a CJK console
})
_TYPO_CHARS = frozenset("\u2018\u2019\u201a\u201b\u2032\u00b4\u201c\u201d\u201e\u2033\u00ab\u00bb\u2010\u2011"
                        "\u2012\u2013\u2014\u2212\u00a0\u2007\u202f\u3000\u200b\u200c\u200d\ufeff\uff08\uff09"
                        "\uff1a\uff0c")
# UTF-8 read as cp1252 or latin-1: a lead byte shown as one of these, then continuation bytes shown as
# more of them ("â€™" for ’, "Ã©" for é, "ï»¿" for a byte-order mark).
_MOJIBAKE = re.compile(r"[\u00c2-\u00f4][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6"
                       r"\u02dc\u2013\u2014\u2018-\u201e\u2020-\u2022\u2026\u2030\u2039\u203a\u20ac\u2122]")
# Markdown around a pasted log: a fence (``` or ~~~, with a language), quote markers, a shell prompt.
_FENCE = re.compile(r"^\s*(?:```|~~~)[\w+-]*\s*$")
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
_PROMPT = re.compile(r"^\s*(?:\$|PS [A-Z]:\\[^>]{0,200}>|\([\w.-]{1,60}\)\s*\$?)\s+(?=\S)")
_BACKTICKS = re.compile(r"^\s*`+|`+\s*$")
# Chinese and Japanese put no space between a word and a version or file name ("安装了cudnn-8.9", "找不到cudnn64_8.dll");
# Python's \w and \b count their characters as word characters, so no rule would see a word start there. A space is
# put at each such seam (never inside an ASCII word).
_CJK_ASCII = re.compile(r"(?<=[\u3040-\u30ff\u3400-\u9fff])(?=[A-Za-z0-9])|(?<=[A-Za-z0-9])(?=[\u3040-\u30ff\u3400-\u9fff])")
_UNCHECKED = re.compile(r"^\s*[-*+]\s+\[ \]\s")
# Widths a terminal or an issue form wraps at: a line of exactly this length was cut mid-word.
_WRAP_WIDTHS = frozenset({80, 100, 120, 132, 160, 200})


def normalise_line(line: str) -> str:
    """One line as the rules expect it: colour codes, NULs, typographic punctuation, mojibake and Markdown
    debris removed, UTF-16 text shown as 8-bit put back together."""
    if "\x1b" in line:
        line = strip_ansi(line)
    if "\x00" in line:
        line = line.replace("\x00", "")
    line = _despace(line)
    if not line.isascii():
        line = _unmojibake(line)
        if _CJK_ASCII.search(line):
            line = _CJK_ASCII.sub(" ", line)
        if any(c in _TYPO_CHARS for c in line):
            line = line.translate(_TYPOGRAPHIC)
    if "**" in line:  # Markdown bold around an issue form's labels: "**TensorRT Version**: 10.2.0.19"
        line = line.replace("**", "")
    if line[:1] in (" ", "`", ">", "$", "~", "P", "(", "\t") or line.endswith("`"):
        line = _demarkdown(line)
    if "[ ]" in line and _UNCHECKED.match(line):
        return ""  # an issue template's option the person did not tick ("- [ ] Linux in WSL") says nothing
    return line


def decode_line(raw: bytes) -> str:
    """A line of bytes as text: UTF-8 (and UTF-16 with its byte-order mark) first; a line that is not
    UTF-8 came from a Windows code page, GBK (a Chinese Windows) where it reads as CJK text, else cp1252."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16", "replace")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        text = raw.decode("gbk")
        if any("\u4e00" <= c <= "\u9fff" for c in text):
            return text
    except UnicodeDecodeError:
        pass
    return raw.decode("cp1252", "replace")


def wrap_joiner(previous_length: int) -> str:
    """What goes between a line and the next when a wrapped message is put back together: nothing when
    the line was cut at a terminal's width (the cut can fall inside a word: ``CUDAE`` / ``xecutionProvider``),
    a space otherwise."""
    return "" if previous_length in _WRAP_WIDTHS else " "


def _unmojibake(line: str) -> str:
    """UTF-8 shown as cp1252 (or latin-1) turned back, for the runs of the line that round-trip."""
    if not _MOJIBAKE.search(line):
        return line
    for codec in ("cp1252", "latin-1"):
        try:
            return line.encode(codec).decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            continue
    # a mixed line: repair each run that round-trips on its own
    return re.sub(r"[\u0080-\u00ff\u0152-\u2122]{2,}", _repair_run, line)


def _repair_run(m: re.Match[str]) -> str:
    run = m.group(0)
    for codec in ("cp1252", "latin-1"):
        try:
            return run.encode(codec).decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            continue
    return run


def _demarkdown(line: str) -> str:
    if _FENCE.match(line):
        return ""
    stripped = _QUOTE.sub("", line, count=1) if line.lstrip()[:1] == ">" and not line.lstrip().startswith(">>>") \
        else line
    stripped = _PROMPT.sub("", stripped, count=1)
    if "`" in stripped:
        stripped = _BACKTICKS.sub("", stripped)
    return stripped


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

"""TOML read with the line of every string: pyproject.toml, uv.lock, poetry.lock, pylock.toml.

``tomllib`` (3.11+) forgets where a value came from, and a finding must name the line a requirement
is written on; Python 3.10 has no TOML reader at all. So this is a small TOML reader of its own
(standard library only): tables, arrays of tables, dotted and quoted keys, basic and literal strings
(also multi-line), arrays and inline tables over several lines, comments. Every string comes back as a
:class:`LocatedStr`, a ``str`` that also carries its 1-based ``line``; numbers, booleans and dates come
back as their text. Malformed input raises :class:`TomlError` with the line; it never loops or recurses
without bound (nesting is limited).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["LocatedStr", "TomlError", "read_toml"]

_MAX_DEPTH = 64
_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
# fast paths: a basic string without escapes, a literal string, blanks and comments, a bare scalar
_PLAIN_BASIC = re.compile(r'"([^"\\\n]*)"(?!")')
_PLAIN_LITERAL = re.compile(r"'([^'\n]*)'(?!')")
_BLANKS = re.compile(r"(?:[ \t\r]|#[^\n]*)*")
_BLANKS_NL = re.compile(r"(?:[ \t\r\n]|#[^\n]*)*")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\", "e": "\x1b"}


class LocatedStr(str):
    """A string value with the line it starts on."""

    line: int

    def __new__(cls, value: str, line: int) -> LocatedStr:
        s = super().__new__(cls, value)
        s.line = line
        return s


class TomlError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


class _Parser:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.n = len(text)
        self.line = 1

    # -- characters -------------------------------------------------------------------------------
    def peek(self) -> str:
        return self.s[self.i] if self.i < self.n else ""

    def advance(self, k: int = 1) -> None:
        for _ in range(k):
            if self.i < self.n and self.s[self.i] == "\n":
                self.line += 1
            self.i += 1

    def skip_ws(self, newlines: bool = False) -> None:
        m = (_BLANKS_NL if newlines else _BLANKS).match(self.s, self.i)
        if m is not None and m.end() > self.i:
            if newlines:
                self.line += self.s.count("\n", self.i, m.end())
            self.i = m.end()

    def error(self, message: str) -> TomlError:
        return TomlError(self.line, message)

    # -- document ---------------------------------------------------------------------------------
    def document(self) -> dict[str, Any]:
        root: dict[str, Any] = {}
        current = root
        while True:
            self.skip_ws(newlines=True)
            if self.i >= self.n:
                return root
            if self.peek() == "[":
                current = self.header(root)
            else:
                self.key_value(current, 0)
            self.skip_ws()
            if self.i < self.n and self.peek() != "\n":
                raise self.error(f"unexpected {self.peek()!r} after a value")

    def header(self, root: dict[str, Any]) -> dict[str, Any]:
        array = self.s.startswith("[[", self.i)
        self.advance(2 if array else 1)
        self.skip_ws()
        keys = self.key()
        self.skip_ws()
        close = "]]" if array else "]"
        if not self.s.startswith(close, self.i):
            raise self.error("unclosed table header")
        self.advance(len(close))
        table = root
        for k in keys[:-1]:
            table = self.descend(table, k)
        last = keys[-1]
        if array:
            items = table.setdefault(last, [])
            if not isinstance(items, list):
                raise self.error(f"{last!r} is not an array of tables")
            new: dict[str, Any] = {}
            items.append(new)
            return new
        return self.descend(table, last)

    def descend(self, table: dict[str, Any], key: str) -> dict[str, Any]:
        value = table.setdefault(key, {})
        if isinstance(value, list) and value and isinstance(value[-1], dict):
            return value[-1]  # a sub-table of the last element of an array of tables
        if not isinstance(value, dict):
            raise self.error(f"{key!r} is not a table")
        return value

    def key(self) -> list[str]:
        parts = [self.simple_key()]
        self.skip_ws()
        while self.peek() == ".":
            self.advance()
            self.skip_ws()
            parts.append(self.simple_key())
            self.skip_ws()
        return parts

    def simple_key(self) -> str:
        c = self.peek()
        if c in ('"', "'"):
            return str(self.string())
        start = self.i
        while self.i < self.n and self.s[self.i] in _BARE:
            self.i += 1
        if start == self.i:
            raise self.error("a key was expected")
        return self.s[start:self.i]

    def key_value(self, table: dict[str, Any], depth: int) -> None:
        keys = self.key()
        self.skip_ws()
        if self.peek() != "=":
            raise self.error("'=' was expected after a key")
        self.advance()
        self.skip_ws()
        value = self.value(depth)
        for k in keys[:-1]:
            table = self.descend(table, k)
        table[keys[-1]] = value

    # -- values -----------------------------------------------------------------------------------
    def value(self, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise self.error("values nested too deeply")
        c = self.peek()
        if c in ('"', "'"):
            return self.string()
        if c == "[":
            return self.array(depth)
        if c == "{":
            return self.inline_table(depth)
        start = self.i
        while self.i < self.n and self.s[self.i] not in ",]}\n#" and not (
                self.s[self.i] in " \t" and not self._date_space()):
            self.i += 1
        text = self.s[start:self.i].strip()
        if not text:
            raise self.error("a value was expected")
        return text

    def _date_space(self) -> bool:
        # "1979-05-27 07:32:00": a space between a date and a time belongs to the value
        return self.i + 1 < self.n and self.s[self.i + 1].isdigit() and self.s[self.i - 1].isdigit()

    def string(self) -> LocatedStr:
        line = self.line
        quote = self.peek()
        m = (_PLAIN_BASIC if quote == '"' else _PLAIN_LITERAL).match(self.s, self.i)
        if m is not None and not self.s.startswith(quote * 3, self.i):
            self.i = m.end()  # no newline inside: the line stays
            return LocatedStr(m.group(1), line)
        if self.s.startswith(quote * 3, self.i):
            return LocatedStr(self.multiline(quote), line)
        self.advance()
        out: list[str] = []
        while True:
            if self.i >= self.n or self.s[self.i] == "\n":
                raise TomlError(line, "unterminated string")
            c = self.s[self.i]
            if c == quote:
                self.advance()
                return LocatedStr("".join(out), line)
            if c == "\\" and quote == '"':
                out.append(self.escape())
                continue
            out.append(c)
            self.i += 1

    def escape(self) -> str:
        self.i += 1
        c = self.peek()
        if c in _ESCAPES:
            self.i += 1
            return _ESCAPES[c]
        if c in ("u", "U"):
            width = 4 if c == "u" else 8
            digits = self.s[self.i + 1:self.i + 1 + width]
            self.i += 1 + width
            try:
                return chr(int(digits, 16))
            except ValueError:
                raise self.error("bad unicode escape") from None
        raise self.error(f"bad escape \\{c}")

    def multiline(self, quote: str) -> str:
        start_line = self.line
        self.advance(3)
        if self.peek() == "\n":
            self.advance()
        out: list[str] = []
        while True:
            if self.i >= self.n:
                raise TomlError(start_line, "unterminated multi-line string")
            if self.s.startswith(quote * 3, self.i):
                extra = 0  # up to two quotes may sit right before the closing three
                while extra < 2 and self.s.startswith(quote * 4, self.i):
                    out.append(quote)
                    self.advance()
                    extra += 1
                self.advance(3)
                return "".join(out)
            c = self.s[self.i]
            if c == "\\" and quote == '"':
                if self.s[self.i + 1:self.i + 2] in ("\n", " ", "\t", "\r"):
                    self.advance()
                    self.skip_ws(newlines=True)
                    continue
                out.append(self.escape())
                continue
            out.append(c)
            self.advance()

    def array(self, depth: int) -> list[Any]:
        self.advance()
        items: list[Any] = []
        while True:
            self.skip_ws(newlines=True)
            if self.peek() == "]":
                self.advance()
                return items
            if self.i >= self.n:
                raise self.error("unterminated array")
            items.append(self.value(depth + 1))
            self.skip_ws(newlines=True)
            if self.peek() == ",":
                self.advance()
            elif self.peek() != "]":
                raise self.error("',' or ']' was expected in an array")

    def inline_table(self, depth: int) -> dict[str, Any]:
        self.advance()
        table: dict[str, Any] = {}
        while True:
            # TOML 1.1 allows newlines in inline tables; uv and poetry write them on one line
            self.skip_ws(newlines=True)
            if self.peek() == "}":
                self.advance()
                return table
            if self.i >= self.n:
                raise self.error("unterminated inline table")
            self.key_value(table, depth + 1)
            self.skip_ws(newlines=True)
            if self.peek() == ",":
                self.advance()
            elif self.peek() != "}":
                raise self.error("',' or '}' was expected in an inline table")


def read_toml(text: str) -> dict[str, Any]:
    """The document as nested dicts and lists, every string a :class:`LocatedStr`; TomlError when malformed."""
    return _Parser(text.replace("\r\n", "\n")).document()

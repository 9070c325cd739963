"""``lazy(pattern)``: a regular expression compiled on first use.

A module of the check path compiles its patterns when it is imported; ``re`` takes 50-300 µs for each,
and most of them serve files or packages a given machine does not have (TensorRT, plugin EPs, MIG
devices, torch's pins). Compiling those on first use saves ~2 ms of every ``check``. Patterns used on
every run (the soname parser, for one) stay ``re.compile``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator

__all__ = ["LazyPattern", "lazy"]


class LazyPattern:
    """The methods of ``re.Pattern[str]`` the package calls, compiling the pattern on the first call."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source = source
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled

    @property
    def pattern(self) -> str:
        return self._source

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.fullmatch(string, pos, endpos)

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.search(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[str]:
        return self.compiled.findall(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        return self.compiled.sub(repl, string, count)

    def __repr__(self) -> str:
        return f"lazy({self._source!r}, {self._flags!r})"


def lazy(source: str, flags: int = 0) -> LazyPattern:
    """``re.compile(source, flags)``, compiled on first use."""
    return LazyPattern(source, flags)

"""Regular expressions without compiling them on every start.

``re`` takes 50-500 µs to compile a pattern, in Python code; the ~20 patterns a plain ``check`` used to
compile were ~10% of its instructions, more than all of its matching. Two ways out, by how often a
pattern meets a string it matches:

- ``lazy(pattern)``: compiled on first use. For patterns that serve files or packages a given machine
  does not have (TensorRT, plugin EPs, MIG devices, torch's pins, DLL names on Linux), often behind a
  cheap test that a match needs (``".dll" in name.lower()``).
- Read by hand, for names every machine has (sonames, versions, RECORD paths): the module keeps the
  pattern, lazy, as the rule's definition, reads ASCII text itself and hands any other text to the
  pattern (Unicode digits and case folding are the pattern's business). ``tests/test_hand_matchers.py``
  holds each reader and its pattern to one answer on generated text.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator

__all__ = ["LazyPattern", "digits_end", "lazy"]


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


def digits_end(text: str, start: int) -> int:
    """Where the run of ASCII digits at ``text[start:]`` ends (``start`` when there is none)."""
    end = start
    while end < len(text) and "0" <= text[end] <= "9":
        end += 1
    return end

"""pip requirement files read as text: each requirement with its line, the includes and the feeds.

A pure reader (standard library only, no file access): ``read_requirements(text)`` gives what pip would
read from the file, with the 1-based line each item starts on. Continuation lines (a trailing backslash)
are joined, ``#`` comments after whitespace are dropped (pip's rule: ``#`` must start the line or follow
whitespace, so an URL fragment stays). ``-r``/``-c`` name other files (the caller reads them);
``--index-url``/``-i``, ``--extra-index-url`` and ``--find-links``/``-f`` are feeds. Requirements stay
strings: the deciding stage parses them with ``packaging``. Options this reader does not know are kept
as ``other`` lines, never an error.
"""

from __future__ import annotations

from ortdoctor.core.record import record

__all__ = ["Feed", "Include", "ReqFile", "ReqLine", "read_requirements", "split_logical_lines"]


@record
class ReqLine:
    line: int  # 1-based line the requirement starts on
    text: str  # the requirement as pip reads it (comment and per-line options removed)
    raw: str  # the physical line(s) as written, continuations joined with a space (for a replacement)


@record
class Include:
    line: int
    kind: str  # "r": requirements, "c": constraints
    target: str  # the path as written (relative to the including file)


@record
class Feed:
    line: int
    kind: str  # "index-url", "extra-index-url", "find-links"
    url: str


@record
class ReqFile:
    requirements: tuple[ReqLine, ...]
    includes: tuple[Include, ...]
    feeds: tuple[Feed, ...]


_FEED_OPTIONS = {
    "-i": "index-url", "--index-url": "index-url", "--extra-index-url": "extra-index-url",
    "-f": "find-links", "--find-links": "find-links",
}
_INCLUDE_OPTIONS = {"-r": "r", "--requirement": "r", "-c": "c", "--constraint": "c"}
# per-requirement options pip accepts after a requirement on the same line
_LINE_OPTIONS = ("--hash", "--global-option", "--config-settings", "--install-option")


def split_logical_lines(text: str) -> list[tuple[int, str]]:
    """``(first line, logical line)`` pairs: backslash continuations joined, comments removed."""
    out: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, physical in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        stripped = _strip_comment(physical)
        if stripped.endswith("\\"):
            pending.append(stripped[:-1])
            continue
        pending.append(stripped)
        logical = " ".join(part.strip() for part in pending).strip()
        pending = []
        if logical:
            out.append((start, logical))
    if pending:
        logical = " ".join(part.strip() for part in pending).strip()
        if logical:
            out.append((start, logical))
    return out


def _strip_comment(line: str) -> str:
    if line.lstrip().startswith("#"):
        return ""
    i = line.find("#")
    while i > 0:
        if line[i - 1] in " \t":
            return line[:i].rstrip()
        i = line.find("#", i + 1)
    return line.rstrip()


def _option_value(words: list[str], i: int) -> tuple[str | None, str | None, int]:
    """The option at ``words[i]`` and its value (``-r x``, ``-rx``, ``--opt=x``, ``--opt x``)."""
    word = words[i]
    if word.startswith("--") and "=" in word:
        name, _, value = word.partition("=")
        return name, value, i + 1
    if word in _FEED_OPTIONS or word in _INCLUDE_OPTIONS:
        return word, (words[i + 1] if i + 1 < len(words) else None), i + 2
    if len(word) > 2 and word[:2] in ("-r", "-c", "-i", "-f") and not word.startswith("--"):
        return word[:2], word[2:], i + 1
    return None, None, i + 1


def read_requirements(text: str) -> ReqFile:
    """Read a pip requirements file's text (see the module docstring)."""
    reqs: list[ReqLine] = []
    includes: list[Include] = []
    feeds: list[Feed] = []
    physical = text.splitlines()
    for line, logical in split_logical_lines(text):
        if logical.startswith("-"):
            words = logical.split()
            i = 0
            while i < len(words):
                name, value, i = _option_value(words, i)
                if name is None or value is None:
                    continue
                if name in _INCLUDE_OPTIONS:
                    includes.append(Include(line, _INCLUDE_OPTIONS[name], value))
                elif name in _FEED_OPTIONS:
                    feeds.append(Feed(line, _FEED_OPTIONS[name], value))
            continue
        requirement = logical
        for option in _LINE_OPTIONS:
            cut = requirement.find(" " + option)
            if cut != -1:
                requirement = requirement[:cut].rstrip()
        raw = physical[line - 1].rstrip() if line - 1 < len(physical) else logical
        reqs.append(ReqLine(line, requirement, raw))
    return ReqFile(tuple(reqs), tuple(includes), tuple(feeds))

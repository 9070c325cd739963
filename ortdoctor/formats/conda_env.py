"""A conda ``environment.yml`` read line by line: its conda specs and its ``pip:`` section, with lines.

Standard library only, and no YAML loader: a loader forgets lines, and these files are a fixed shape
(``name``, ``channels``, ``dependencies`` as a block list whose one mapping item is ``pip:`` with its own
list). Flow lists (``[a, b]``) and anything else are skipped, never an error.
"""

from __future__ import annotations

from ortdoctor.core.record import record

__all__ = ["CondaEnv", "CondaItem", "read_conda_env"]


@record
class CondaItem:
    line: int
    text: str  # "python=3.10", "pytorch-cuda=12.1", "onnxruntime-gpu==1.18.0" (quotes removed)
    pip: bool  # an item of the `pip:` section


@record
class CondaEnv:
    items: tuple[CondaItem, ...]
    channels: tuple[str, ...]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _value(text: str) -> str:
    text = text.split(" #", 1)[0].strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    return text.strip()


def read_conda_env(text: str) -> CondaEnv:
    items: list[CondaItem] = []
    channels: list[str] = []
    section = ""  # "dependencies", "channels" or ""
    pip_indent = -1
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if _indent(line) == 0 and not stripped.startswith("-"):
            key = stripped.split(":", 1)[0].strip()
            section = key if key in ("dependencies", "channels") else ""
            pip_indent = -1
            continue
        if not section or (not stripped.startswith("- ") and stripped != "-"):
            if pip_indent >= 0 and _indent(line) <= pip_indent:
                pip_indent = -1
            continue
        entry = _value(stripped[1:])
        if section == "channels":
            channels.append(entry)
            continue
        indent = _indent(line)
        if pip_indent >= 0 and indent <= pip_indent:
            pip_indent = -1
        if entry.rstrip(":").strip() == "pip" and entry.endswith(":"):
            pip_indent = indent
            continue
        if entry:
            items.append(CondaItem(number, entry, pip_indent >= 0))
    return CondaEnv(tuple(items), tuple(channels))

"""``os.path.realpath``, remembered for the length of one diagnosis.

Deciding which copy of each library the loader takes compares the same few dozen files many times (on
the H200: 545 ``realpath`` calls, 4,647 ``lstat`` calls, ~25 ms of a ~230 ms ``check``, for about 60
distinct paths). Inside :func:`remembered_realpaths` each path is resolved once; outside it (a
long-lived process, the hook, tests that move symlinks between two checks) :func:`real_path` is plain
``os.path.realpath``, so nothing stale outlives the run that assumed the files stood still.
"""

from __future__ import annotations

import os
import stat
from contextvars import ContextVar, Token

__all__ = ["real_path", "remembered_realpaths"]

_remembered: ContextVar[dict[str, str] | None] = ContextVar("ortdoctor_realpaths", default=None)


def real_path(path: str) -> str:
    """``os.path.realpath(path)``; from memory inside :func:`remembered_realpaths`.

    Nothing is opened or read: a FIFO, a device, a symlink loop (resolved as far as it goes) or a missing
    file is a path like any other. Raises ValueError for a path holding a NUL, as ``os.path.realpath``
    does; nothing else. (The NUL is refused here, not left to ``realpath``: past a symlink loop
    ``realpath`` stops looking at components and would return the NUL unchecked.)"""
    if "\0" in path:
        raise ValueError("embedded null byte")
    memory = _remembered.get()
    if memory is None:
        return os.path.realpath(path)
    found = memory.get(path)
    if found is None:
        found = memory[path] = _resolve(path, memory)
    return found


def _resolve(path: str, memory: dict[str, str]) -> str:
    """``os.path.realpath(path)``, reusing what is remembered of its directory: the files a check
    compares sit in a few directories, and ``realpath`` would ``lstat`` every component of each path
    again (~10 per path). A plain absolute path (no ``.``, ``..`` or doubled ``/``, POSIX) whose last
    component is not a symbolic link resolves to its directory's real path joined with its name, as
    ``realpath`` resolves it one component at a time; anything else goes to ``realpath`` itself."""
    parent, sep, name = path.rpartition("/")
    if (os.sep != "/" or not sep or not path.startswith("/") or not name or name in (".", "..")
            or "//" in path or "/./" in path or "/../" in path):
        return os.path.realpath(path)
    base = real_path(parent) if parent else "/"
    joined = base + name if base.endswith("/") else base + "/" + name
    try:
        mode = os.lstat(joined).st_mode
    except OSError:
        return joined  # realpath (not strict) keeps a component that does not exist as it is
    return os.path.realpath(path) if stat.S_ISLNK(mode) else joined


class _Remembering:
    """The context manager :func:`remembered_realpaths` returns (a class: ``contextlib`` is not imported
    by a check otherwise)."""

    def __init__(self) -> None:
        self._token: Token[dict[str, str] | None] | None = None

    def __enter__(self) -> None:
        memory = _remembered.get()
        self._token = _remembered.set(memory if memory is not None else {})

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _remembered.reset(self._token)
            self._token = None


def remembered_realpaths() -> _Remembering:
    """Resolve each path once while the block runs (a nested block shares the outer memory)."""
    return _Remembering()

"""``os.path.realpath``, remembered for the length of one diagnosis.

Deciding which copy of each library the loader takes compares the same few dozen files many times (on
the H200: 545 ``realpath`` calls, 4,647 ``lstat`` calls, ~25 ms of a ~230 ms ``check``, for about 60
distinct paths). Inside :func:`remembered_realpaths` each path is resolved once; outside it (a
long-lived process, the hook, tests that move symlinks between two checks) :func:`real_path` is plain
``os.path.realpath``, so nothing stale outlives the run that assumed the files stood still.
"""

from __future__ import annotations

import os
from contextvars import ContextVar, Token

__all__ = ["real_path", "remembered_realpaths"]

_remembered: ContextVar[dict[str, str] | None] = ContextVar("ortdoctor_realpaths", default=None)


def real_path(path: str) -> str:
    """``os.path.realpath(path)``; from memory inside :func:`remembered_realpaths`."""
    memory = _remembered.get()
    if memory is None:
        return os.path.realpath(path)
    found = memory.get(path)
    if found is None:
        found = memory[path] = os.path.realpath(path)
    return found


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

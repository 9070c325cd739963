"""``os.path.realpath``, remembered for the length of one diagnosis.

Deciding which copy of each library the loader takes compares the same few dozen files many times (on
the H200: 545 ``realpath`` calls, 4,647 ``lstat`` calls, ~25 ms of a ~230 ms ``check``, for about 60
distinct paths). Inside :func:`remembered_realpaths` each path is resolved once; outside it (a
long-lived process, the hook, tests that move symlinks between two checks) :func:`real_path` is plain
``os.path.realpath``, so nothing stale outlives the run that assumed the files stood still.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

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


@contextmanager
def remembered_realpaths() -> Iterator[None]:
    """Resolve each path once while the block runs (a nested block shares the outer memory)."""
    token = _remembered.set(_remembered.get() if _remembered.get() is not None else {})
    try:
        yield
    finally:
        _remembered.reset(token)

"""Is a library file the one its wheel installed? Its size against the size RECORD promises.

A truncated library (an interrupted download, a full disk) does not fail cleanly: ``dlopen`` maps it,
and the first page past the file's end kills the process with SIGBUS — the user's program, when the
hook preloads it. So every file ortdoctor is about to load, and every file ``check`` chose, is checked
against its wheel's RECORD first (a ``stat`` per file; hashes would cost a read of hundreds of MB).
"""

from __future__ import annotations

import os

from ortdoctor.core.facts import Environment, NvidiaWheel
from ortdoctor.core.record import record
from ortdoctor.formats.realpath import real_path

__all__ = ["Damage", "damage_of"]


@record
class Damage:
    path: str
    expected: int  # bytes, as RECORD says
    actual: int | None  # bytes on disk; None when it cannot be read
    wheel: NvidiaWheel  # the wheel that installed it (reinstall that one, pinned)

    def describe(self) -> str:
        have = "missing" if self.actual is None else f"{self.actual} bytes"
        return f"{self.path}: {have}, but {self.wheel.name} {self.wheel.version} installed {self.expected} bytes"


def damage_of(env: Environment, path: str) -> Damage | None:
    """The mismatch between ``path`` and its wheel's RECORD; None when it matches or no wheel owns it."""
    real = real_path(path)
    name = os.path.basename(real)
    for wheel in env.nvidia_wheels:
        for recorded, size in wheel.sizes:
            if recorded not in (path, real) and (os.path.basename(recorded) != name
                                                  or real_path(recorded) != real):
                continue
            try:
                actual: int | None = os.stat(real).st_size
            except OSError:
                actual = None
            return None if actual == size else Damage(path, size, actual, wheel)
    return None

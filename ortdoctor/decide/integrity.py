"""Is a library file whole? Its size against the size RECORD promises, or against its own ELF headers.

A truncated library (an interrupted download, a full disk) does not fail cleanly: ``dlopen`` maps it,
and the first page past the file's end kills the process with SIGBUS — the user's program, when the
hook preloads it. So every file ortdoctor is about to load, and every file ``check`` chose, is checked
against its wheel's RECORD first (a ``stat`` per file; hashes would cost a read of hundreds of MB).

A file no wheel installed (a copy on ``LD_LIBRARY_PATH``, a toolkit directory) has no RECORD: its own
program headers say how many bytes its ``PT_LOAD`` segments span, and a file shorter than that is cut
short (:func:`short_elf`; a few bounded ``pread`` calls, never a read of the file).
"""

from __future__ import annotations

import os
import stat
import struct

from ortdoctor.core.facts import Environment, NvidiaWheel
from ortdoctor.core.record import record
from ortdoctor.formats.realpath import real_path

__all__ = ["Damage", "ShortElf", "damage_of", "short_elf"]

_PT_LOAD = 1
_MAX_PHNUM = 4096  # a hostile header must not make us read without bound


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


@record
class ShortElf:
    """An ELF file shorter than its headers say: mapping it kills the process (SIGBUS)."""

    path: str
    size: int  # bytes on disk
    needed: int | None  # bytes its PT_LOAD segments span; None: shorter than its own ELF header

    def describe(self) -> str:
        if self.needed is None:
            return f"{self.path}: {self.size} bytes, shorter than an ELF header: the file was cut short"
        return (f"{self.path}: {self.size} bytes, but its ELF program headers map {self.needed} bytes: the file "
                "was cut short")


def short_elf(path: str) -> ShortElf | None:
    """The rule for a library no RECORD describes: the file at ``path`` (followed through links) is
    empty, ends inside its ELF header or program header table, or is shorter than the furthest byte
    of its ``PT_LOAD`` segments (``p_offset + p_filesz``). None when it is whole, not an ELF file
    (``dlopen`` refuses that cleanly), not a regular file, or cannot be read (nothing can be told).

    Reads at most the 64-byte header and a program header table of at most 4096 entries, with
    ``pread`` at offsets the header gives; never blocks on a FIFO or device."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        size = st.st_size
        head = os.pread(fd, 64, 0)
        if size == 0:
            return ShortElf(path, 0, None)
        if not b"\x7fELF".startswith(head[:4]):
            return None  # not an ELF file: dlopen says so without mapping it
        if len(head) < 6:
            return ShortElf(path, size, None)
        if head[4] not in (1, 2) or head[5] not in (1, 2):
            return None
        bits64 = head[4] == 2
        end = "<" if head[5] == 1 else ">"
        if len(head) < (64 if bits64 else 52):
            return ShortElf(path, size, None)
        if bits64:
            phoff, phentsize, phnum = (struct.unpack_from(end + "Q", head, 32)[0],
                                       *struct.unpack_from(end + "HH", head, 54))
            fmt, want = end + "IIQQQQQQ", 56
        else:
            phoff, phentsize, phnum = (struct.unpack_from(end + "I", head, 28)[0],
                                       *struct.unpack_from(end + "HH", head, 42))
            fmt, want = end + "IIIIIIII", 32
        if phnum == 0 or phnum > _MAX_PHNUM or phentsize < want:
            return None  # not a loadable object, or headers we do not read: leave it to dlopen
        table_end = phoff + phnum * phentsize
        if table_end > size:
            return ShortElf(path, size, table_end)
        table = os.pread(fd, phnum * phentsize, phoff)
        if len(table) < phnum * phentsize:
            return ShortElf(path, size, table_end)
        extent = table_end
        for i in range(phnum):
            fields = struct.unpack_from(fmt, table, i * phentsize)
            if fields[0] != _PT_LOAD:
                continue
            offset, filesz = (fields[2], fields[5]) if bits64 else (fields[1], fields[4])
            extent = max(extent, offset + filesz)
        return ShortElf(path, size, extent) if size < extent else None
    except (OSError, struct.error, OverflowError, ValueError):
        return None
    finally:
        os.close(fd)

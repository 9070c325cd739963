"""Shared objects mapped into a process, read from ``/proc/<pid>/maps`` (Linux only).

What is mapped is what the loader will reuse: a second ``dlopen`` of the same soname returns the copy
already in memory, whatever the search path says. Each object is reported once, by realpath, with the
device and inode that identify the file even when two paths name it.
"""

from __future__ import annotations

import os

from ortdoctor.core.record import record
from ortdoctor.formats.realpath import real_path
from ortdoctor.formats.regular_file import open_regular, read_capped

__all__ = ["MappedObject", "mapped_objects", "mapped_paths"]


@record
class MappedObject:
    """One file mapped into the process, as /proc/<pid>/maps shows it."""

    path: str  # realpath of the file
    inode: int
    device: str  # "fd:01" as the kernel writes it
    deleted: bool = False  # replaced or removed after it was mapped


_DELETED = " (deleted)"
_MAX_MAPS = 64 * 1024 * 1024


def _is_shared_object(path: str) -> bool:
    name = os.path.basename(path)
    return name.endswith((".so", ".dll")) or ".so." in name


def mapped_objects(maps_path: str = "/proc/self/maps") -> tuple[MappedObject, ...]:
    """The shared objects mapped in a process, once each (by realpath and inode), in mapping order;
    () when the maps file cannot be read (not Linux, no /proc, not a regular file). Never raises.

    The one parser of ``/proc/<pid>/maps``: the probes, the preloader and the hook all read it here.
    """
    try:
        with open_regular(maps_path) as f:  # a FIFO or device at the path is refused, not read
            if os.fstat(f.fileno()).st_size > _MAX_MAPS:  # /proc files say 0; a huge regular file is not one
                return ()
            text = read_capped(f, _MAX_MAPS)[:_MAX_MAPS].decode("utf-8", "surrogateescape")
    except (OSError, ValueError):  # ValueError: not a regular file, or a path holding a NUL
        return ()
    seen: dict[tuple[str, int], MappedObject] = {}
    for line in text.splitlines():
        parts = line.split(None, 5)  # address perms offset dev inode pathname (which may hold spaces)
        if len(parts) < 6:
            continue
        _addr, _perms, _offset, device, inode_text, path = parts
        if not (len(inode_text) <= 20 and inode_text.isascii() and inode_text.isdigit()):
            continue  # the kernel writes a decimal inode; int() refuses "²" and 5,000 digits
        if int(inode_text) == 0 or not path.startswith("/"):
            continue
        if "\0" in path:  # the kernel writes none; a path holding one cannot be resolved
            continue
        deleted = path.endswith(_DELETED)
        if deleted:
            path = path[: -len(_DELETED)]
        if not _is_shared_object(path):
            continue
        real = path if deleted else real_path(path)
        key = (real, int(inode_text))
        if key not in seen:
            seen[key] = MappedObject(real, int(inode_text), device, deleted)
    return tuple(seen.values())


def mapped_paths(maps_path: str = "/proc/self/maps") -> tuple[str, ...]:
    """Realpaths of the mapped shared objects, each once, in mapping order."""
    return tuple(dict.fromkeys(m.path for m in mapped_objects(maps_path)))

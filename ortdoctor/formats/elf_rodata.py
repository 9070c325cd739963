"""Find a marked string in an ELF file's read-only data without loading it.

onnxruntime's ``get_build_info()`` returns a string compiled into the pybind module
(``ORT Build Info: git-branch=..., cuda-plugin-ep=1, build type=Release``). This module finds it by
reading the section headers, then only the ``.rodata`` section (2.5 MB of a 30 MB module), in
chunks. Standard library only; a malformed file gives None, never an exception.
"""

from __future__ import annotations

import os
import struct

from ortdoctor.formats.regular_file import open_regular, read_at

TYPE_CHECKING = False
if TYPE_CHECKING:
    from io import BufferedIOBase
    from typing import BinaryIO

__all__ = ["find_marked_string"]

_MAGIC = b"\x7fELF"
_MAX_SECTIONS = 65536
_MAX_SHSTRTAB = 1024 * 1024
_MAX_SECTION = 64 * 1024 * 1024  # a .rodata larger than this is not scanned
_CHUNK = 256 * 1024
_MAX_STRING = 4096


class _Unreadable(ValueError):
    """A header points outside the file (becomes None)."""


def find_marked_string(path: str | os.PathLike[str], marker: bytes, section: bytes = b".rodata") -> str | None:
    """The NUL-terminated string that starts with ``marker`` in ``section`` of the ELF file, or None.

    Never raises: a file that cannot be opened, is not a regular file or not an ELF file, or whose headers
    point outside it gives None. At most the section's first 64 MB are read, a chunk at a time."""
    try:
        with open_regular(os.fspath(path)) as f:
            bounds = _section(f, section)
            if bounds is None:
                return None
            return _scan(f, bounds[0], bounds[1], marker)
    except (OSError, ValueError, struct.error, OverflowError, MemoryError):  # ValueError: _Unreadable too
        return None


def _section(f: BinaryIO, wanted: bytes) -> tuple[int, int] | None:
    ident = f.read(16)
    if len(ident) < 16 or ident[:4] != _MAGIC or ident[4] not in (1, 2) or ident[5] not in (1, 2):
        return None
    bits64 = ident[4] == 2
    end = "<" if ident[5] == 1 else ">"
    if bits64:
        hdr = f.read(48)
        if len(hdr) < 48:
            return None
        e_shoff, = struct.unpack_from(end + "Q", hdr, 24)
        e_shentsize, e_shnum, e_shstrndx = struct.unpack_from(end + "HHH", hdr, 42)
        sh_fmt = end + "IIQQQQIIQQ"
    else:
        hdr = f.read(36)
        if len(hdr) < 36:
            return None
        e_shoff, = struct.unpack_from(end + "I", hdr, 16)
        e_shentsize, e_shnum, e_shstrndx = struct.unpack_from(end + "HHH", hdr, 30)
        sh_fmt = end + "IIIIIIIIII"
    size = struct.calcsize(sh_fmt)
    if not e_shoff or not e_shnum or e_shnum > _MAX_SECTIONS or e_shentsize < size or e_shstrndx >= e_shnum:
        return None
    # read_at refuses a table larger than the file before allocating it (65,536 headers of 65,535 bytes
    # would be a 4 GB request)
    table = read_at(f, e_shoff, e_shnum * e_shentsize, "section headers", "", _Unreadable)
    headers = [struct.unpack_from(sh_fmt, table, i * e_shentsize) for i in range(e_shnum)]
    # (name, type, flags, addr, offset, size, ...) in both layouts
    str_off, str_size = headers[e_shstrndx][4], headers[e_shstrndx][5]
    if str_size > _MAX_SHSTRTAB:
        return None
    names = read_at(f, str_off, str_size, "section names", "", _Unreadable)
    for h in headers:
        name_off, offset, length = h[0], h[4], h[5]
        stop = names.find(b"\0", name_off)
        if name_off < len(names) and names[name_off:stop if stop >= 0 else len(names)] == wanted:
            return (offset, length) if 0 < length <= _MAX_SECTION else None
    return None


def _scan(f: BufferedIOBase, offset: int, length: int, marker: bytes) -> str | None:
    """The string at the first ``marker`` in ``length`` bytes at ``offset``, up to its NUL (at most
    ``_MAX_STRING`` bytes, and not past the section)."""
    # One buffer, read into again and again: a fresh megabyte for each read (and for joining two) is
    # memory the kernel must map page by page, which cost more than reading and searching (~2 ms of a
    # check for the 2.5 MB section of onnxruntime-gpu 1.31, whose marker lies halfway in).
    buf = bytearray(_CHUNK)
    view = memoryview(buf)
    overlap = len(marker) - 1  # a marker cut by a chunk's end is found in the next one
    kept = 0  # bytes at the front of buf carried over from the last chunk
    start = offset  # the file offset of buf[0]
    end_of_section = offset + length
    f.seek(offset)
    while start + kept < end_of_section:
        want = min(_CHUNK - kept, end_of_section - start - kept)
        got = f.readinto(view[kept:kept + want])
        if not got:
            return None
        filled = kept + got
        at = buf.find(marker, 0, filled)
        if at >= 0:
            f.seek(start + at)
            text = f.read(min(_MAX_STRING, end_of_section - start - at))
            stop = text.find(b"\0")
            return text[:stop if stop >= 0 else len(text)].decode("utf-8", "replace")
        kept = min(overlap, filled)
        start += filled - kept
        buf[:kept] = buf[filled - kept:filled]
    return None

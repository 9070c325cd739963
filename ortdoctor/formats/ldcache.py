"""``/etc/ld.so.cache``, read in Python (``ldconfig`` is never run): soname -> paths in search order.

The one reader of the cache: ``check``'s probes, the preloader's fast path and the driver probe all
use it, so they agree on what the dynamic loader would find.
"""

from __future__ import annotations

import os
import struct

from ortdoctor.formats.regular_file import NotRegularFile, open_regular, read_capped

__all__ = ["LdCacheError", "parse_ld_cache", "read_ld_cache", "try_read_ld_cache"]

_NEW_MAGIC = b"glibc-ld.so.cache1.1"
_OLD_MAGIC = b"ld.so-1.7.0"
_MAX_CACHE = 64 * 1024 * 1024

# Entry flags: the low byte is the library type, the next byte the architecture (glibc ldconfig.h).
_FLAG_ELF_LIBC6 = 0x0003
_ARCH_FLAGS = {"x86_64": 0x0300, "aarch64": 0x0A00, "ppc64le": 0x0500, "s390x": 0x0400, "riscv64": 0x1000}

class LdCacheError(ValueError):
    """The ld.so cache is not in a format we read (the message says why)."""


def parse_ld_cache(data: bytes, machine: str | None = None) -> dict[str, tuple[str, ...]]:
    """soname -> paths, in cache order (the order ``ldconfig -p`` prints and ld.so searches).

    Reads glibc's new format (``glibc-ld.so.cache1.1``), alone or after an old-format
    (``ld.so-1.7.0``) block. With ``machine`` ("x86_64", ...) only libc6 entries for that
    architecture are kept, as the loader of such a process would; unknown machines keep every entry.

    Raises:
        LdCacheError: anything that is not such a cache; nothing else. The work and memory are bounded by
            the size of ``data``.
    """
    try:
        return _parse(data, machine)
    except (struct.error, MemoryError, OverflowError) as exc:
        raise LdCacheError(f"cannot read the cache: {type(exc).__name__}: {exc}") from None


def _parse(data: bytes, machine: str | None) -> dict[str, tuple[str, ...]]:
    if data.startswith(_NEW_MAGIC):
        new_at = 0
    elif data.startswith(_OLD_MAGIC):
        if len(data) < 16:
            raise LdCacheError("truncated old-format header")
        (nlibs_old,) = struct.unpack_from("<I", data, 12)
        new_at = 16 + nlibs_old * 12
        new_at = (new_at + 7) & ~7  # the new block is aligned to 8 bytes
        if not data.startswith(_NEW_MAGIC, new_at):
            return _parse_old(data, nlibs_old, machine)
    else:
        raise LdCacheError("unknown ld.so cache format")
    return _parse_new(data, new_at, machine)


def _parse_new(data: bytes, base: int, machine: str | None) -> dict[str, tuple[str, ...]]:
    if len(data) < base + 48:
        raise LdCacheError("truncated header")
    endian_flag = data[base + 28]
    # flags: 0 unknown (assume little), 1 invalid, 2 little endian, 3 big endian (glibc dl-cache.h)
    end = ">" if endian_flag == 3 else "<"
    nlibs, _len_strings = struct.unpack_from(end + "II", data, base + 20)
    entries_at = base + 48
    if entries_at + nlibs * 24 > len(data):
        raise LdCacheError(f"{nlibs} entries do not fit in {len(data)} bytes")
    want = _ARCH_FLAGS.get(machine or "")
    out: dict[str, list[str]] = {}
    strings = _Strings(data)
    # ~500 entries on a desktop system, every check: one C iterator over the table
    table = memoryview(data)[entries_at:entries_at + nlibs * 24]
    for flags, key, value, _osversion, _hwcap in struct.iter_unpack(end + "iIIIQ", table):
        if want is not None and (flags & 0xFF != _FLAG_ELF_LIBC6 or flags & 0xFF00 != want):
            continue
        # String offsets of the new format count from the start of its header.
        out.setdefault(strings.at(base + key), []).append(strings.at(base + value))
    return {k: tuple(v) for k, v in out.items()}


def _parse_old(data: bytes, nlibs: int, machine: str | None) -> dict[str, tuple[str, ...]]:
    strings_at = 16 + nlibs * 12
    if strings_at > len(data):
        raise LdCacheError(f"{nlibs} entries do not fit in {len(data)} bytes")
    want = _ARCH_FLAGS.get(machine or "")
    out: dict[str, list[str]] = {}
    strings = _Strings(data)
    for i in range(nlibs):
        flags, key, value = struct.unpack_from("<iII", data, 16 + i * 12)
        if want is not None and (flags & 0xFF != _FLAG_ELF_LIBC6 or flags & 0xFF00 != want):
            continue
        # Old-format offsets count from the end of the entry table.
        out.setdefault(strings.at(strings_at + key), []).append(strings.at(strings_at + value))
    return {k: tuple(v) for k, v in out.items()}


class _Strings:
    """The cache's strings by offset: each distinct one cut out and decoded once, and all of them together
    no more than the file's size (a real cache names each string once; ldconfig shares a soname with the
    tail of its path, which the factor 2 covers). A million entries naming one 30 MB string would
    otherwise ask for terabytes."""

    __slots__ = ("_budget", "_data", "_decoded")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._decoded: dict[int, str] = {}
        self._budget = 2 * len(data)

    def at(self, offset: int) -> str:
        found = self._decoded.get(offset)
        if found is not None:
            return found
        data = self._data
        if offset >= len(data):
            raise LdCacheError(f"string offset {offset} outside the file")
        stop = data.find(b"\0", offset)
        if stop < 0:
            raise LdCacheError(f"unterminated string at {offset}")
        self._budget -= stop - offset
        if self._budget < 0:
            raise LdCacheError("the entries name more string bytes than the file holds")
        found = self._decoded[offset] = data[offset:stop].decode("utf-8", "surrogateescape")
        return found


def read_ld_cache(path: str = "/etc/ld.so.cache", machine: str | None = None) -> dict[str, tuple[str, ...]]:
    """Read and parse a cache file.

    Raises:
        OSError: the file cannot be opened or read (FileNotFoundError: there is no cache).
        LdCacheError: anything else: not a regular file (a FIFO is refused before it is read), larger
            than any real cache, or not in a format read here.
    """
    try:
        with open_regular(path) as f:  # a FIFO must not block the reader, nor a device feed it forever
            too_big = os.fstat(f.fileno()).st_size > _MAX_CACHE  # a sparse 100 GB file: not read at all
            data = b"" if too_big else read_capped(f, _MAX_CACHE)
    except ValueError as exc:  # NotRegularFile, or a path holding a NUL
        raise LdCacheError(str(exc) if isinstance(exc, NotRegularFile) else f"{path!r}: {exc}") from None
    if too_big or len(data) > _MAX_CACHE:
        raise LdCacheError(f"larger than {_MAX_CACHE} bytes")
    return parse_ld_cache(data, machine)


def try_read_ld_cache(path: str = "/etc/ld.so.cache", machine: str | None = None) -> dict[str, tuple[str, ...]]:
    """:func:`read_ld_cache`, with {} for an absent, unreadable or malformed cache (the fast path's form:
    a missing cache only means the loader has nothing cached). Never raises."""
    try:
        return read_ld_cache(path, machine)
    except (OSError, LdCacheError, ValueError, MemoryError):  # ValueError: a path holding a NUL
        return {}

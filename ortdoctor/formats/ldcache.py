"""``/etc/ld.so.cache``, read in Python (``ldconfig`` is never run): soname -> paths in search order.

The one reader of the cache: ``check``'s probes, the preloader's fast path and the driver probe all
use it, so they agree on what the dynamic loader would find.
"""

from __future__ import annotations

import struct

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
    """
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
    find = data.find
    # ~500 entries on a desktop system, every check: one C iterator over the table and the strings cut
    # out here (_string below is the same rule, and raises its errors where a string is not there)
    table = memoryview(data)[entries_at:entries_at + nlibs * 24]
    for flags, key, value, _osversion, _hwcap in struct.iter_unpack(end + "iIIIQ", table):
        if want is not None and (flags & 0xFF != _FLAG_ELF_LIBC6 or flags & 0xFF00 != want):
            continue
        # String offsets of the new format count from the start of its header.
        key_at, value_at = base + key, base + value
        key_end, value_end = find(b"\0", key_at), find(b"\0", value_at)
        if key_end < 0 or value_end < 0:  # outside the file, or unterminated: _string says which
            _string(data, key_at)
            _string(data, value_at)
        out.setdefault(data[key_at:key_end].decode("utf-8", "surrogateescape"), []).append(
            data[value_at:value_end].decode("utf-8", "surrogateescape"))
    return {k: tuple(v) for k, v in out.items()}


def _parse_old(data: bytes, nlibs: int, machine: str | None) -> dict[str, tuple[str, ...]]:
    strings_at = 16 + nlibs * 12
    if strings_at > len(data):
        raise LdCacheError(f"{nlibs} entries do not fit in {len(data)} bytes")
    want = _ARCH_FLAGS.get(machine or "")
    out: dict[str, list[str]] = {}
    for i in range(nlibs):
        flags, key, value = struct.unpack_from("<iII", data, 16 + i * 12)
        if want is not None and (flags & 0xFF != _FLAG_ELF_LIBC6 or flags & 0xFF00 != want):
            continue
        # Old-format offsets count from the end of the entry table.
        out.setdefault(_string(data, strings_at + key), []).append(_string(data, strings_at + value))
    return {k: tuple(v) for k, v in out.items()}


def _string(data: bytes, offset: int) -> str:
    if offset >= len(data):
        raise LdCacheError(f"string offset {offset} outside the file")
    stop = data.find(b"\0", offset)
    if stop < 0:
        raise LdCacheError(f"unterminated string at {offset}")
    return data[offset:stop].decode("utf-8", "surrogateescape")


def read_ld_cache(path: str = "/etc/ld.so.cache", machine: str | None = None) -> dict[str, tuple[str, ...]]:
    """Read and parse a cache file. Raises OSError or :class:`LdCacheError`."""
    with open(path, "rb") as f:
        data = f.read(_MAX_CACHE + 1)
    if len(data) > _MAX_CACHE:
        raise LdCacheError(f"larger than {_MAX_CACHE} bytes")
    return parse_ld_cache(data, machine)


def try_read_ld_cache(path: str = "/etc/ld.so.cache", machine: str | None = None) -> dict[str, tuple[str, ...]]:
    """:func:`read_ld_cache`, with {} for an absent, unreadable or malformed cache (the fast path's form:
    a missing cache only means the loader has nothing cached)."""
    try:
        return read_ld_cache(path, machine)
    except (OSError, LdCacheError, struct.error):
        return {}

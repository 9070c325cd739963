"""A small PE reader: the machine and the import table (imported DLL names) of a Windows DLL.

It seeks to the headers, the section table and the import directory and reads only those bytes.
Standard library only; runs on any OS, so Windows wheels can be inspected anywhere. Every malformed
input raises :class:`PeError` and nothing else.
"""

from __future__ import annotations

import os
import struct

from ortdoctor.core.facts import PeInfo
from ortdoctor.formats.regular_file import open_regular, read_at

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = ["PeError", "is_pe", "read_pe"]

_MACHINES = {0x14C: "x86", 0x8664: "x86_64", 0xAA64: "arm64", 0x1C4: "arm"}
_PE32, _PE32_PLUS = 0x10B, 0x20B
_IMPORT_DIRECTORY = 1
_DESCRIPTOR_SIZE = 20

# Bounds that keep a hostile file from making us read or loop without limit.
_MAX_SECTIONS = 96  # the PE format's own limit
_MAX_DESCRIPTORS = 4096
_MAX_NAME = 512
_MAX_LFANEW = 16 * 1024 * 1024


class PeError(ValueError):
    """The file is not a readable PE image (the message says why)."""


def is_pe(path: str | os.PathLike[str]) -> bool:
    """True when the file starts with the DOS ``MZ`` magic (never raises)."""
    try:
        with open_regular(path) as f:
            return f.read(2) == b"MZ"
    except (OSError, ValueError):  # ValueError: not a regular file
        return False


def read_pe(path: str | os.PathLike[str]) -> PeInfo:
    """Read the machine and the imported DLL names of ``path``.

    Raises:
        PeError: not a PE file, truncated, or its headers point outside the file.
    """
    p = os.fspath(path)
    try:
        with open_regular(p) as f:  # a FIFO named like a DLL must not block the reader
            return _read(f, p)
    except PeError:
        raise
    except (OSError, struct.error, OverflowError, MemoryError, ValueError) as exc:
        raise PeError(f"{p}: cannot read PE headers: {exc}") from None


def _read_at(f: BinaryIO, offset: int, size: int, what: str, path: str) -> bytes:
    return read_at(f, offset, size, what, path, PeError)


def _read(f: BinaryIO, path: str) -> PeInfo:
    dos = f.read(64)
    if len(dos) < 64 or dos[:2] != b"MZ":
        raise PeError(f"{path}: not a PE file (no MZ header)")
    (e_lfanew,) = struct.unpack_from("<I", dos, 0x3C)
    if e_lfanew > _MAX_LFANEW:
        raise PeError(f"{path}: implausible PE header offset {e_lfanew}")
    head = _read_at(f, e_lfanew, 24, "PE header", path)
    if head[:4] != b"PE\0\0":
        raise PeError(f"{path}: not a PE file (no PE signature at {e_lfanew})")
    machine_id, n_sections, _ts, _symptr, _nsyms, opt_size, _chars = struct.unpack_from("<HHIIIHH", head, 4)
    machine = _MACHINES.get(machine_id, f"unknown({machine_id:#x})")
    if n_sections > _MAX_SECTIONS:
        raise PeError(f"{path}: implausible section count {n_sections}")
    if opt_size < 2:
        raise PeError(f"{path}: no optional header")

    opt_off = e_lfanew + 24
    opt = _read_at(f, opt_off, opt_size, "optional header", path)
    (magic,) = struct.unpack_from("<H", opt, 0)
    if magic == _PE32:
        count_at, dirs_at = 92, 96
    elif magic == _PE32_PLUS:
        count_at, dirs_at = 108, 112
    else:
        raise PeError(f"{path}: unknown optional header magic {magic:#x}")
    if opt_size < count_at + 4:
        raise PeError(f"{path}: optional header too short ({opt_size} bytes)")
    (n_dirs,) = struct.unpack_from("<I", opt, count_at)
    if n_dirs <= _IMPORT_DIRECTORY or opt_size < dirs_at + 8 * (_IMPORT_DIRECTORY + 1):
        return PeInfo(path=path, machine=machine)  # no import directory at all
    import_rva, import_size = struct.unpack_from("<II", opt, dirs_at + 8 * _IMPORT_DIRECTORY)

    raw_sections = _read_at(f, opt_off + opt_size, 40 * n_sections, "section table", path)
    sections: list[tuple[int, int, int, int]] = []  # (virtual address, virtual size, raw offset, raw size)
    for i in range(n_sections):
        vsize, vaddr, raw_size, raw_ptr = struct.unpack_from("<IIII", raw_sections, i * 40 + 8)
        sections.append((vaddr, max(vsize, raw_size), raw_ptr, raw_size))

    if import_rva == 0:
        return PeInfo(path=path, machine=machine)

    def rva_to_offset(rva: int) -> int:
        for vaddr, vsize, raw_ptr, raw_size in sections:
            if vaddr <= rva < vaddr + vsize:
                delta = rva - vaddr
                if delta >= raw_size:
                    raise PeError(f"{path}: RVA {rva:#x} points into uninitialised data")
                return raw_ptr + delta
        raise PeError(f"{path}: RVA {rva:#x} is outside every section")

    start = rva_to_offset(import_rva)
    imports: list[str] = []
    for i in range(_MAX_DESCRIPTORS):
        desc = _read_at(f, start + i * _DESCRIPTOR_SIZE, _DESCRIPTOR_SIZE, "import descriptor", path)
        original_first_thunk, _ts, _fwd, name_rva, first_thunk = struct.unpack("<IIIII", desc)
        if not (original_first_thunk or name_rva or first_thunk):
            break  # the all-zero terminator
        if name_rva == 0:
            raise PeError(f"{path}: import descriptor {i} has no name")
        imports.append(_read_name(f, rva_to_offset(name_rva), path))
    else:
        raise PeError(f"{path}: import table has no terminator within {_MAX_DESCRIPTORS} entries")
    del import_size  # the descriptor list ends with its terminator; the size field is often loose
    return PeInfo(path=path, machine=machine, imports=tuple(imports))


def _read_name(f: BinaryIO, offset: int, path: str) -> str:
    f.seek(offset)
    raw = f.read(_MAX_NAME)
    stop = raw.find(b"\0")
    if stop < 0:
        raise PeError(f"{path}: unterminated DLL name at {offset}")
    if stop == 0:
        raise PeError(f"{path}: empty DLL name at {offset}")
    return raw[:stop].decode("ascii", "replace")

"""A small ELF reader: SONAME, DT_NEEDED, RPATH/RUNPATH and the machine of a shared object.

It seeks to the program headers and the dynamic segment and reads only those bytes, so inspecting
the 284 MB CUDA provider library costs a few kilobytes of I/O. Standard library only. Every
malformed input raises :class:`ElfError` and nothing else.
"""

from __future__ import annotations

import os
import struct

from ortdoctor.core.facts import ElfInfo
from ortdoctor.formats.regular_file import open_regular, read_at

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = ["ElfError", "is_elf", "read_elf"]

_MAGIC = b"\x7fELF"
_PT_LOAD = 1
_PT_DYNAMIC = 2
_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_STRSZ, _DT_SONAME, _DT_RPATH, _DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29

# e_machine values we name; anything else is reported as unknown(<n>).
_MACHINES = {3: "x86", 8: "mips", 20: "ppc", 21: "ppc64", 22: "s390x", 40: "arm", 62: "x86_64",
             183: "aarch64", 243: "riscv64"}

# Bounds that keep a hostile file from making us read or allocate without limit.
_MAX_PHNUM = 4096
_MAX_DYN_ENTRIES = 65536
_MAX_STRTAB = 16 * 1024 * 1024
_STRING_MARGIN = 64 * 1024  # string bytes the dynamic entries may name beyond the table's own size


class ElfError(ValueError):
    """The file is not a readable ELF shared object (the message says why)."""


def is_elf(path: str | os.PathLike[str]) -> bool:
    """True when the file starts with the ELF magic (never raises)."""
    try:
        with open_regular(path) as f:
            return f.read(4) == _MAGIC
    except (OSError, ValueError):  # ElfError and NotRegularFile are both ValueErrors
        return False


def read_elf(path: str | os.PathLike[str]) -> ElfInfo:
    """Read the dynamic section of ``path``.

    Raises:
        ElfError: not an ELF file, truncated, or its headers point outside the file.
    """
    p = os.fspath(path)
    try:
        with open_regular(p) as f:
            return _read(f, p)
    except ElfError:
        raise
    except (OSError, struct.error, OverflowError, MemoryError, ValueError) as exc:
        # ValueError: seek() to an offset >= 2**63 (a corrupt 64-bit header field) raises it.
        raise ElfError(f"{p}: cannot read ELF headers: {exc}") from None


def _read_at(f: BinaryIO, offset: int, size: int, what: str, path: str) -> bytes:
    return read_at(f, offset, size, what, path, ElfError)


def _read(f: BinaryIO, path: str) -> ElfInfo:
    ident = f.read(16)
    if len(ident) < 16 or ident[:4] != _MAGIC:
        raise ElfError(f"{path}: not an ELF file")
    ei_class, ei_data = ident[4], ident[5]
    if ei_class not in (1, 2):
        raise ElfError(f"{path}: unknown ELF class {ei_class}")
    if ei_data not in (1, 2):
        raise ElfError(f"{path}: unknown ELF byte order {ei_data}")
    bits = 32 if ei_class == 1 else 64
    end = "<" if ei_data == 1 else ">"

    if bits == 64:
        hdr = _read_at(f, 16, 48, "ELF header", path)
        _type, e_machine, _ver, _entry, e_phoff, _shoff, _flags, _ehsize, e_phentsize, e_phnum = struct.unpack(
            end + "HHIQQQIHHH", hdr[:42]
        )
        ph_fmt, dyn_fmt = end + "IIQQQQQQ", end + "qQ"
    else:
        hdr = _read_at(f, 16, 36, "ELF header", path)
        _type, e_machine, _ver, _entry, e_phoff, _shoff, _flags, _ehsize, e_phentsize, e_phnum = struct.unpack(
            end + "HHIIIIIHHH", hdr[:30]
        )
        ph_fmt, dyn_fmt = end + "IIIIIIII", end + "iI"
    machine = _MACHINES.get(e_machine, f"unknown({e_machine})")

    ph_size = struct.calcsize(ph_fmt)
    if e_phnum > _MAX_PHNUM or (e_phnum and e_phentsize < ph_size):
        raise ElfError(f"{path}: implausible program header table ({e_phnum} x {e_phentsize} bytes)")
    table = _read_at(f, e_phoff, e_phnum * e_phentsize, "program headers", path) if e_phnum else b""

    loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz): to map addresses to file offsets
    dynamic: tuple[int, int] | None = None  # (offset, size)
    for i in range(e_phnum):
        raw = table[i * e_phentsize : i * e_phentsize + ph_size]
        if bits == 64:
            p_type, _pf, p_offset, p_vaddr, _pa, p_filesz, _memsz, _align = struct.unpack(ph_fmt, raw)
        else:
            p_type, p_offset, p_vaddr, _pa, p_filesz, _memsz, _pf, _align = struct.unpack(ph_fmt, raw)
        if p_type == _PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == _PT_DYNAMIC:
            dynamic = (p_offset, p_filesz)

    if dynamic is None:  # a static executable or an object file: nothing dynamic to report
        return ElfInfo(path=path, machine=machine, bits=bits)

    dyn_size = struct.calcsize(dyn_fmt)
    count = min(dynamic[1] // dyn_size, _MAX_DYN_ENTRIES)
    dyn = _read_at(f, dynamic[0], count * dyn_size, "dynamic section", path)
    entries: list[tuple[int, int]] = []
    for i in range(count):
        tag, val = struct.unpack_from(dyn_fmt, dyn, i * dyn_size)
        if tag == _DT_NULL:
            break
        entries.append((tag, val))

    strtab_addr = next((v for t, v in entries if t == _DT_STRTAB), None)
    strsz = next((v for t, v in entries if t == _DT_STRSZ), None)
    if strtab_addr is None or strsz is None:
        raise ElfError(f"{path}: dynamic section has no string table")
    if strsz > _MAX_STRTAB:
        raise ElfError(f"{path}: implausible dynamic string table size {strsz}")
    strtab_off = _vaddr_to_offset(strtab_addr, loads)
    if strtab_off is None:
        raise ElfError(f"{path}: dynamic string table address {strtab_addr:#x} is outside every segment")
    strtab = _read_at(f, strtab_off, strsz, "dynamic string table", path)

    # Each distinct string is cut out and decoded once, and all of them together may take no more than
    # the table holds: 65,536 entries naming one unterminated 16 MB string would otherwise ask for a
    # terabyte. Real tables name each string once (a linker may share a tail: "libfoo.so" inside
    # "libfoo.so.1" costs its few bytes twice), so the budget is the table's size plus a margin.
    decoded: dict[int, str] = {}
    budget = len(strtab) + _STRING_MARGIN

    def string(offset: int) -> str:
        nonlocal budget
        found = decoded.get(offset)
        if found is not None:
            return found
        if offset < 0 or offset >= len(strtab):
            raise ElfError(f"{path}: string offset {offset} outside the dynamic string table")
        stop = strtab.find(b"\0", offset)
        stop = stop if stop >= 0 else len(strtab)
        budget -= stop - offset
        if budget < 0:
            raise ElfError(f"{path}: the dynamic entries name more string bytes than the string table holds")
        found = decoded[offset] = strtab[offset:stop].decode("utf-8", "surrogateescape")
        return found

    soname: str | None = None
    needed: list[str] = []
    rpath: list[str] = []
    runpath: list[str] = []
    empty_entry = False
    for tag, val in entries:
        if tag == _DT_NEEDED:
            needed.append(string(val))
        elif tag == _DT_SONAME:
            soname = string(val)
        elif tag in (_DT_RPATH, _DT_RUNPATH):
            parts = string(val).split(":")
            # glibc searches an empty entry ("a:" or "a::b") as the current directory
            empty_entry = empty_entry or "" in parts
            (rpath if tag == _DT_RPATH else runpath).extend(x for x in parts if x)
    return ElfInfo(path=path, machine=machine, bits=bits, soname=soname, needed=tuple(needed),
                   rpath=tuple(rpath), runpath=tuple(runpath), search_path_has_cwd=empty_entry)


def _vaddr_to_offset(addr: int, loads: list[tuple[int, int, int]]) -> int | None:
    for vaddr, offset, filesz in loads:
        if vaddr <= addr < vaddr + filesz:
            return addr - vaddr + offset
    # Some linkers store the string table as a file offset already (no PT_LOAD covers it).
    return addr if not loads else None

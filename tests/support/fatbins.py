"""The committed nvcc-built libraries under tests/data/fatbin/, cuobjdump's listing of them, and a
Windows DLL image around their fatbin bytes (no MSVC here to build a real one)."""

from __future__ import annotations

import re
import struct
from collections import Counter
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "fatbin"
FIXTURES = ("sass_only", "ptx_only", "sass_ptx_zstd", "sass_ptx_speed", "arch_specific", "family")
MAGIC = struct.pack("<I", 0xBA55ED50)


def library(name: str) -> Path:
    return DATA / f"{name}.so"


def cuobjdump_listing(name: str) -> Counter[tuple[str, str]]:
    """(kind, target) -> how many images ``cuobjdump --list-elf --list-ptx`` listed, from the listing
    scripts/build_fatbin_fixtures.sh saved next to the library."""
    out: Counter[tuple[str, str]] = Counter()
    for line in (DATA / f"{name}.cuobjdump.txt").read_text().splitlines():
        m = re.match(r"(ELF|PTX) file\s+\d+: .*\.(sm_\w+)\.(cubin|ptx)$", line.strip())
        if m:
            out[("sass" if m.group(1) == "ELF" else "ptx", m.group(2))] += 1
    return out


def fatbin_containers(data: bytes) -> list[bytes]:
    """The fatbin containers of a library's bytes: from the first magic on, one after another."""
    pos = data.find(MAGIC)
    out: list[bytes] = []
    while pos >= 0 and data[pos : pos + 4] == MAGIC:
        _magic, _version, header_size, size = struct.unpack_from("<IHHQ", data, pos)
        out.append(data[pos : pos + header_size + size])
        pos += header_size + size
    return out


def _idata(imports: tuple[str, ...], rva: int) -> bytes:
    """An import table at ``rva``: one descriptor per DLL name, the all-zero terminator, then the names."""
    names_at = 20 * (len(imports) + 1)
    names, descriptors = b"", b""
    for dll in imports:
        descriptors += struct.pack("<IIIII", 0, 0, 0, rva + names_at + len(names), 0)  # thunks: not read
        names += dll.encode() + b"\0"
    return descriptors + bytes(20) + names


def make_pe(sections: list[tuple[bytes, bytes]], *, virtual_sizes: bool = True,
            imports: tuple[str, ...] = ()) -> bytes:
    """A minimal PE32+ DLL image whose sections are ``(8-byte name, raw bytes)``, each padded to the
    512-byte file alignment (the virtual size keeps the real length, as linkers write it). ``imports``: the
    DLL names of an import table, in an ``.idata`` section put first (at RVA 0x1000, so no larger section
    before it overlaps its addresses)."""
    if imports:
        sections = [(b".idata", _idata(imports, 0x1000)), *sections]
    lfanew, opt_size = 0x80, 112 + 8 * 16
    table_at = lfanew + 24 + opt_size
    raw_at = (table_at + 40 * len(sections) + 0x1FF) & ~0x1FF
    dos = bytearray(64)
    dos[:2] = b"MZ"
    struct.pack_into("<I", dos, 0x3C, lfanew)
    image = bytearray(dos) + bytes(lfanew - 64)
    image += b"PE\0\0" + struct.pack("<HHIIIHH", 0x8664, len(sections), 0, 0, 0, opt_size, 0x2022)
    opt = bytearray(opt_size)
    struct.pack_into("<HI", opt, 0, 0x20B, 0)
    struct.pack_into("<I", opt, 108, 16)
    if imports:
        struct.pack_into("<II", opt, 112 + 8, 0x1000, len(sections[0][1]))  # data directory 1: imports
    image += opt
    bodies = b""
    for i, (name, body) in enumerate(sections):
        raw_size = (len(body) + 0x1FF) & ~0x1FF
        header = bytearray(40)
        header[:8] = name.ljust(8, b"\0")[:8]
        struct.pack_into("<IIII", header, 8, len(body) if virtual_sizes else 0, 0x1000 * (i + 1), raw_size,
                         raw_at + len(bodies))
        image += header
        bodies += body + bytes(raw_size - len(body))
    image += bytes(raw_at - len(image))
    return bytes(image + bodies)

"""Crafted hostile inputs for the readers: small files whose headers ask for far more work or memory than
they hold, or that nest beyond what a parser can take. Each was once a crash, a hang or gigabytes of
memory; the regression tests and the fuzz seeds build them from here."""

from __future__ import annotations

import struct
from pathlib import Path


def elf_needed_bomb(entries: int, string_bytes: int, *, distinct: bool = False) -> bytes:
    """A 64-bit ELF whose ``entries`` DT_NEEDED entries all name one ``string_bytes`` long string (or, with
    ``distinct``, start one byte further into it each): a reader that cuts and decodes the string per entry
    asks for ``entries * string_bytes`` bytes."""
    dyn_off = 64 + 2 * 56
    str_off = dyn_off + (entries + 3) * 16
    total = str_off + string_bytes
    dyn = b"".join(struct.pack("<qQ", 1, i if distinct else 0) for i in range(entries))
    dyn += b"".join(struct.pack("<qQ", t, v) for t, v in [(5, str_off), (10, string_bytes), (0, 0)])
    ehdr = b"\x7fELF\x02\x01\x01" + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 64, 0, 0, 64, 56, 2, 64, 0, 0)
    load = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, total, total, 4096)
    dynamic = struct.pack("<IIQQQQQQ", 2, 6, dyn_off, dyn_off, dyn_off, len(dyn), len(dyn), 8)
    return ehdr + load + dynamic + dyn + b"A" * (string_bytes - 1) + b"\0"


def elf_huge_program_header_table() -> bytes:
    """A 64-byte ELF header claiming 4,096 program headers of 65,535 bytes each (268 MB)."""
    return b"\x7fELF\x02\x01\x01" + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 64, 0, 0, 64, 65535,
                                                           4096, 64, 0, 0)


def ld_cache_bomb(entries: int, string_bytes: int, *, distinct: bool = False) -> bytes:
    """A new-format ld.so.cache whose ``entries`` entries all name one ``string_bytes`` long string as key
    and value (or, with ``distinct``, start one byte further into it each)."""
    at = 48 + entries * 24
    header = b"glibc-ld.so.cache1.1" + struct.pack("<II", entries, string_bytes) + b"\x02" + bytes(19)
    table = b"".join(struct.pack("<iIIIQ", 0x0303, at + (i if distinct else 0), at + (i if distinct else 0), 0, 0)
                     for i in range(entries))
    return header + table + b"a" * (string_bytes - 1) + b"\0"


def npy_file(header: bytes, version: int = 2) -> bytes:
    """A .npy file with ``header`` as its header text (length field as the version writes it)."""
    length = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + length + header


#: .npy files that made the reader raise something other than NpyError
NPY_CRAFTED = {
    # a shape of 30,000 additions: the literal parser recurses once per operator
    "recursion": npy_file(b"{'descr': '<f4', 'fortran_order': False, 'shape': (" + b"1+" * 30000 + b"1,), }"),
    # "not not ... 1": the parser's stack is exhausted
    "parser-stack": npy_file(b"not " * 16000 + b"1"),
    # a version-2 file that ends inside its 4-byte header length
    "short-length": b"\x93NUMPY\x02\x00\x10\x00",
    # a version-1 file that ends inside its header
    "short-header": b"\x93NUMPY\x01\x00\x40\x00{'descr'",
    # a header length of 4 GB
    "huge-length": b"\x93NUMPY\x02\x00\xff\xff\xff\xff{",
}

_SECTION = struct.Struct("<IIQQQQIIQQ")  # name, type, flags, addr, offset, size, link, info, align, entsize


def elf_with_sparse_fatbin(path: Path, section_bytes: int) -> Path:
    """An ELF whose ``.nv_fatbin`` section covers ``section_bytes`` of a hole: the file is sparse, its
    section all zeros, as a crafted file (or a file system's preallocation) can leave it."""
    names = b"\0.shstrtab\0.nv_fatbin\0"
    shoff = 64 + len(names)
    shoff += -shoff % 8
    data_at = 4096
    sections = [_SECTION.pack(0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                _SECTION.pack(1, 3, 0, 0, 64, len(names), 0, 0, 1, 0),
                _SECTION.pack(11, 1, 2, 0, data_at, section_bytes, 0, 0, 8, 0)]
    ehdr = b"\x7fELF\x02\x01\x01" + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0,
                                                           64, len(sections), 1)
    head = ehdr + names
    head += bytes(shoff - len(head)) + b"".join(sections)
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(data_at + section_bytes)
    return path


def elf_with_huge_section_table() -> bytes:
    """An ELF whose section count (more than 0xff00 sections: kept in section 0) is 262,144 headers of
    65,535 bytes each: one read of 17 GB for a reader that trusts it."""
    ehdr = b"\x7fELF\x02\x01\x01" + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, 64, 0, 64, 0, 0,
                                                           65535, 0, 0xFFFF)
    section0 = _SECTION.pack(0, 0, 0, 0, 0, 1 << 18, 1, 0, 0, 0)
    return ehdr + section0 + bytes(65535 - len(section0))  # section 0 is read whole: it is in the file

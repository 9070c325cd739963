"""Which GPU architectures a CUDA library carries kernels for, read from its fatbin headers.

nvcc embeds the device code of a library as *fatbins*: containers of kernel images, each either SASS
(a cubin, machine code for one architecture) or PTX (virtual-architecture code that the driver
JIT-compiles for newer GPUs). A GPU whose architecture has neither a matching SASS image nor PTX it
can JIT fails with ``cudaErrorNoKernelImageForDevice`` ("no kernel image is available for execution
on the device"); the answer to "will this build run on my GPU" is in these headers.

Where the fatbins are: the ``.nv_fatbin`` section of an ELF file (``FATBIN_DATA_SECTION_NAME`` in the
CUDA toolkit's ``include/fatbinary_section.h``) and ``.nv_fatb``, the same name cut to the 8 bytes a
PE section name holds, in a Windows DLL. Only the section header table is read to find them.

The container layout is not documented by NVIDIA. It follows public readers (RWTH-ACS/cricket
``cpu/cpu-elf2.c``; GrigoryEvko/nvopen-tools ``fatbin/FORMAT_SPECIFICATION.md``) and was checked
field by field against ``cuobjdump --list-elf --list-ptx`` on libraries built with nvcc 13.0
(``scripts/build_fatbin_fixtures.sh``) and on the onnxruntime-gpu wheels:

* container header, 16 bytes: magic ``0xBA55ED50``, u16 version (1), u16 header size (16), u64 size
  of the entries that follow. A section holds one container per translation unit, back to back,
  sometimes separated by zero padding.
* entry header, 64 bytes or more (its own size is in it; newer toolkits add fields after byte 64):
  u16 kind (1 PTX, 2 ELF/SASS, 8 LTO IR), u16, u32 header size, u64 payload size (the payload
  follows the header; the next entry follows the payload), u32 compressed size, u32, u16 minor,
  u16 major (the PTX ISA version for PTX), u32 architecture (75, 90, 120, ...), u32 + u32 object
  name, u64 flags, u64, u64 uncompressed size.
* flags: 0x2000 compressed with nvcc's "speed" mode, 0x8000 compressed with its ZSTD modes
  (``--compress-mode=size|balance|default`` in CUDA 13), 0x100000 an architecture-specific target
  (``sm_90a``), 0x200000 a family target (``sm_100f``).

Every header is read with one bounded seek + read and the payloads are skipped, so the 220 MB
``.nv_fatbin`` of the CUDA provider costs a few thousand small reads. Every malformed input raises
:class:`FatbinError` and nothing else.
"""

from __future__ import annotations

import errno
import os
import struct
from collections import Counter

from ortdoctor.core.record import record
from ortdoctor.formats.regular_file import open_regular, read_at

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO, Literal

__all__ = ["FatbinError", "FatbinInfo", "KernelImage", "read_fatbin"]

if TYPE_CHECKING:
    ImageKind = Literal["sass", "ptx"]
else:
    ImageKind = str  # the alias is the type checker's; at run time only its name is imported

FATBIN_MAGIC = 0xBA55ED50
_ELF_SECTION = b".nv_fatbin"
_PE_SECTION = b".nv_fatb"

_KIND_PTX, _KIND_ELF = 1, 2
_FLAG_COMPRESSED = 0x2000 | 0x8000
_FLAG_ARCH_SPECIFIC = 0x100000  # sm_90a: runs on exactly that architecture
_FLAG_FAMILY = 0x200000  # sm_100f: runs on the family of that architecture

_CONTAINER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQIIHHIIIQ")  # through the flags; the uncompressed sizes are not needed
_ENTRY_MIN = 64

# Bounds that keep a hostile file from making us read, loop or allocate without limit.
_MAX_SECTIONS = 1 << 18
_MAX_SHSTRTAB = 16 * 1024 * 1024
_MAX_PE_SECTIONS = 96  # the PE format's own limit
_MAX_LFANEW = 16 * 1024 * 1024
_MAX_HEADER = 4096  # container and entry headers are 16..112 bytes today
_MAX_ENTRIES = 1 << 20
_MAX_SECTION_TABLE = 16 * 1024 * 1024  # _MAX_SECTIONS headers of 64 bytes, the size linkers write
_ZERO_CHUNK = 1 << 20
# Zero padding between containers is a few bytes of alignment; reading more zeros than this (holes in a
# sparse file are skipped without reading) means the section is not a fatbin, or a hostile one.
_MAX_PADDING = 64 * 1024 * 1024
_SEEK_DATA: int | None = getattr(os, "SEEK_DATA", None)  # Linux, the BSDs, macOS; not Windows


class FatbinError(ValueError):
    """The file's fatbin headers cannot be read (the message says why)."""


@record(order=True)
class KernelImage:
    """One kind of kernel image: SASS or PTX for one architecture, as the fatbin headers say."""

    kind: ImageKind
    arch: int  # 90 for sm_90, sm_90a and compute_90
    name: str  # the target as nvcc's -gencode spells it: "sm_90a" for SASS, "compute_90" for PTX
    compressed: bool
    ptx_isa: tuple[int, int] | None = None  # (8, 2) for PTX ISA 8.2; None for SASS
    count: int = 1  # how many fatbin entries carry this image (one per translation unit, typically)


@record
class FatbinInfo:
    """The kernel images a library carries (see :func:`read_fatbin`)."""

    path: str
    format: Literal["elf", "pe"]
    sections: int  # fatbin sections found; 0: the file carries no CUDA device code
    containers: int
    images: tuple[KernelImage, ...] = ()
    other_entries: int = 0  # entries that are neither SASS nor PTX (LTO IR, ...)
    # The distinct sets of targets one container holds, each with how many containers hold it, most
    # common first. A container is one translation unit's kernels: a target missing from some sets
    # means those kernels have no image for it, even when the union (``archs``) lists it.
    target_sets: tuple[tuple[tuple[str, ...], int], ...] = ()

    @property
    def sass_archs(self) -> tuple[str, ...]:
        """The SASS targets, sorted by architecture: ("sm_75", "sm_80", "sm_90a")."""
        return _names(self.images, "sass")

    @property
    def ptx_archs(self) -> tuple[str, ...]:
        """The PTX targets, sorted by architecture: ("compute_90",)."""
        return _names(self.images, "ptx")

    @property
    def ptx_isas(self) -> tuple[tuple[int, int], ...]:
        """The PTX ISA versions of the PTX images, sorted: [(8, 2)] for a CUDA 12.2 build."""
        return tuple(sorted({i.ptx_isa for i in self.images if i.ptx_isa is not None}))

    @property
    def archs(self) -> tuple[str, ...]:
        """SASS then PTX targets, the compatibility matrix's ``archs`` form."""
        return self.sass_archs + self.ptx_archs


def _names(images: tuple[KernelImage, ...], kind: ImageKind) -> tuple[str, ...]:
    return tuple(name for _arch, name in sorted({(i.arch, i.name) for i in images if i.kind == kind}))


_ImageKey = tuple[ImageKind, int, str, bool, "tuple[int, int] | None"]


class _Tally:
    """What the walk has counted so far, over every fatbin section of the file."""

    __slots__ = ("entries", "images", "other", "padding", "target_sets")

    def __init__(self) -> None:
        self.images: Counter[_ImageKey] = Counter()
        self.target_sets: Counter[tuple[str, ...]] = Counter()
        self.other = 0
        self.entries = 0
        self.padding = 0  # zero bytes read between containers


def read_fatbin(path: str | os.PathLike[str]) -> FatbinInfo:
    """The kernel images in the fatbin sections of an ELF shared library or a PE DLL.

    Raises:
        FatbinError: not an ELF or PE file, no section header table, or a header that is truncated,
            points outside the file or is not a fatbin header.
    """
    p = os.fspath(path)
    try:
        with open_regular(p) as f:  # a FIFO named like a library must not block the reader
            return _read(f, p)
    except FatbinError:
        raise
    except (OSError, struct.error, OverflowError, MemoryError, ValueError) as exc:
        # ValueError: NotRegularFile, or seek() to an offset >= 2**63 from a corrupt 64-bit field.
        raise FatbinError(f"{p}: cannot read fatbin headers: {exc}") from None


def _at(f: BinaryIO, offset: int, size: int, what: str, path: str) -> bytes:
    return read_at(f, offset, size, what, path, FatbinError)


def _read(f: BinaryIO, path: str) -> FatbinInfo:
    file_size = os.fstat(f.fileno()).st_size
    head = f.read(64)
    fmt: Literal["elf", "pe"]
    if head[:4] == b"\x7fELF":
        fmt, regions = "elf", _elf_sections(f, head, path)
    elif head[:2] == b"MZ":
        fmt, regions = "pe", _pe_sections(f, head, path)
    else:
        raise FatbinError(f"{path}: neither an ELF nor a PE file")
    tally = _Tally()
    for offset, size in regions:
        if offset + size > file_size:
            raise FatbinError(f"{path}: fatbin section at {offset:#x} ({size} bytes) runs past the end of the file")
        _walk(f, path, offset, offset + size, tally)
    images = tuple(sorted(KernelImage(kind, arch, name, compressed, isa, count)
                          for (kind, arch, name, compressed, isa), count in tally.images.items()))
    sets = tuple(sorted(tally.target_sets.items(), key=lambda item: (-item[1], item[0])))
    return FatbinInfo(path=path, format=fmt, sections=len(regions), containers=sum(tally.target_sets.values()),
                      images=images, other_entries=tally.other, target_sets=sets)


def _walk(f: BinaryIO, path: str, pos: int, end: int, tally: _Tally) -> None:
    """Count the containers in ``[pos, end)`` and their entries into ``tally``."""
    while pos < end:
        head = _at(f, pos, min(_CONTAINER.size, end - pos), "fatbin header", path)
        if head[0] == 0:  # padding between containers
            pos = _skip_zeros(f, path, pos, end, tally)
            continue
        if len(head) < _CONTAINER.size:
            raise FatbinError(f"{path}: {len(head)} stray bytes at the end of the fatbin section ({pos:#x})")
        magic, version, header_size, body = _CONTAINER.unpack(head)
        if magic != FATBIN_MAGIC:
            raise FatbinError(f"{path}: no fatbin header at {pos:#x} (magic {magic:#x})")
        if version != 1 or not _CONTAINER.size <= header_size <= _MAX_HEADER:
            raise FatbinError(f"{path}: unknown fatbin header at {pos:#x} (version {version}, size {header_size})")
        stop = pos + header_size + body
        if stop > end:
            raise FatbinError(f"{path}: fatbin at {pos:#x} claims {body} bytes, past the end of its section")
        tally.entries += 1  # a container counts as an entry: millions of empty ones are as implausible
        if tally.entries > _MAX_ENTRIES:
            raise FatbinError(f"{path}: more than {_MAX_ENTRIES} fatbin containers and entries")
        targets: set[tuple[int, str]] = set()
        e = pos + header_size
        while e < stop:
            if stop - e < _ENTRY_MIN:
                raise FatbinError(f"{path}: truncated fatbin entry at {e:#x}")
            (kind, _v, entry_size, payload, _csize, _u, minor, major, arch, _name_off, _name_len,
             flags) = _ENTRY.unpack(_at(f, e, _ENTRY.size, "fatbin entry", path))
            if not _ENTRY_MIN <= entry_size <= _MAX_HEADER:
                raise FatbinError(f"{path}: fatbin entry at {e:#x} has an implausible header size {entry_size}")
            if payload > stop - e - entry_size:
                raise FatbinError(f"{path}: fatbin entry at {e:#x} claims {payload} bytes, past the end of its fatbin")
            tally.entries += 1
            if tally.entries > _MAX_ENTRIES:
                raise FatbinError(f"{path}: more than {_MAX_ENTRIES} fatbin containers and entries")
            if kind in (_KIND_ELF, _KIND_PTX):
                sass = kind == _KIND_ELF
                suffix = "a" if flags & _FLAG_ARCH_SPECIFIC else "f" if flags & _FLAG_FAMILY else ""
                name = f"{'sm' if sass else 'compute'}_{arch}{suffix}"
                tally.images[("sass" if sass else "ptx", arch, name, bool(flags & _FLAG_COMPRESSED),
                              None if sass else (major, minor))] += 1
                targets.add((arch, name))
            else:
                tally.other += 1
            e += entry_size + payload
        # SASS before PTX of the same architecture, as nvcc's -gencode lists are usually written
        tally.target_sets[tuple(name for _a, _p, name in sorted((a, n.startswith("c"), n) for a, n in targets))] += 1
        pos = stop


def _skip_zeros(f: BinaryIO, path: str, pos: int, end: int, tally: _Tally) -> int:
    """The offset of the first non-zero byte at or after ``pos`` (``end`` when there is none).

    A hole of a sparse file is jumped over without reading it (``SEEK_DATA``); the zeros that are read
    count against ``_MAX_PADDING``, so a section of gigabytes of zeros costs a bounded time."""
    while pos < end:
        pos = _next_data(f, pos, end)
        if pos >= end:
            return end
        chunk = _at(f, pos, min(_ZERO_CHUNK, end - pos), "fatbin padding", path)
        stripped = chunk.lstrip(b"\0")
        if stripped:
            return pos + len(chunk) - len(stripped)
        pos += len(chunk)
        tally.padding += len(chunk)
        if tally.padding > _MAX_PADDING:
            raise FatbinError(f"{path}: more than {_MAX_PADDING} bytes of zeros inside the fatbin sections")
    return end


def _next_data(f: BinaryIO, pos: int, end: int) -> int:
    """The first offset at or after ``pos`` that is not in a hole of the file (``end`` when none is
    before it); ``pos`` where holes cannot be asked for. Reads go through ``pread``, so moving the file's
    position here disturbs nothing."""
    if _SEEK_DATA is None:
        return pos
    try:
        return min(os.lseek(f.fileno(), pos, _SEEK_DATA), end)
    except OSError as exc:
        # ENXIO: no data after pos (the rest of the file is a hole); anything else (a file system
        # without the call, or an in-memory file): read as usual
        return end if exc.errno == errno.ENXIO else pos
    except (AttributeError, ValueError):  # no descriptor (an in-memory file, as tests pass)
        return pos


def _elf_sections(f: BinaryIO, ident: bytes, path: str) -> list[tuple[int, int]]:
    """(file offset, size) of every ``.nv_fatbin`` section, from the section header table."""
    if len(ident) < 64:
        raise FatbinError(f"{path}: truncated ELF header")
    ei_class, ei_data = ident[4], ident[5]
    if ei_class not in (1, 2) or ei_data not in (1, 2):
        raise FatbinError(f"{path}: unknown ELF class {ei_class} or byte order {ei_data}")
    end = "<" if ei_data == 1 else ">"
    if ei_class == 2:
        (shoff,) = struct.unpack_from(end + "Q", ident, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", ident, 0x3A)
        sh = struct.Struct(end + "IIQQQQ")  # name, type, flags, addr, offset, size
    else:
        (shoff,) = struct.unpack_from(end + "I", ident, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", ident, 0x2E)
        sh = struct.Struct(end + "IIIIII")
    if shoff == 0:
        raise FatbinError(f"{path}: no section header table (stripped to the program headers)")
    if shentsize < sh.size:
        raise FatbinError(f"{path}: implausible section header size {shentsize}")
    if shnum == 0 or shstrndx == 0xFFFF:
        # More than 0xff00 sections: the real count and string table index live in section 0.
        first = sh.unpack(_at(f, shoff, sh.size, "section header 0", path))
        link_at = 40 if ei_class == 2 else 24
        (link,) = struct.unpack_from(end + "I", _at(f, shoff, shentsize, "section header 0", path), link_at)
        shnum = shnum or first[5]
        shstrndx = link if shstrndx == 0xFFFF else shstrndx
    if shnum > _MAX_SECTIONS:
        raise FatbinError(f"{path}: implausible section count {shnum}")
    if shstrndx >= shnum:
        raise FatbinError(f"{path}: section name table index {shstrndx} outside the {shnum} sections")
    if shnum * shentsize > _MAX_SECTION_TABLE:
        raise FatbinError(f"{path}: implausible section header table ({shnum} x {shentsize} bytes)")
    table = _at(f, shoff, shnum * shentsize, "section header table", path)
    headers = [sh.unpack_from(table, i * shentsize) for i in range(shnum)]
    _n, _t, _fl, _a, str_off, str_size = headers[shstrndx]
    if str_size > _MAX_SHSTRTAB:
        raise FatbinError(f"{path}: implausible section name table size {str_size}")
    names = _at(f, str_off, str_size, "section name table", path)
    wanted = _ELF_SECTION + b"\0"
    nobits = 8
    return [(offset, size) for name, sh_type, _fl, _a, offset, size in headers
            if sh_type != nobits and names[name:name + len(wanted)] == wanted]


def _pe_sections(f: BinaryIO, dos: bytes, path: str) -> list[tuple[int, int]]:
    """(file offset, size) of every ``.nv_fatb`` section, from the section table."""
    if len(dos) < 64:
        raise FatbinError(f"{path}: truncated DOS header")
    (lfanew,) = struct.unpack_from("<I", dos, 0x3C)
    if lfanew > _MAX_LFANEW:
        raise FatbinError(f"{path}: implausible PE header offset {lfanew}")
    head = _at(f, lfanew, 24, "PE header", path)
    if head[:4] != b"PE\0\0":
        raise FatbinError(f"{path}: not a PE file (no PE signature at {lfanew})")
    n_sections, = struct.unpack_from("<H", head, 6)
    opt_size, = struct.unpack_from("<H", head, 20)
    if n_sections > _MAX_PE_SECTIONS:
        raise FatbinError(f"{path}: implausible section count {n_sections}")
    table = _at(f, lfanew + 24 + opt_size, 40 * n_sections, "section table", path)
    out: list[tuple[int, int]] = []
    for i in range(n_sections):
        name = table[i * 40 : i * 40 + 8]
        vsize, _vaddr, raw_size, raw_ptr = struct.unpack_from("<IIII", table, i * 40 + 8)
        if name == _PE_SECTION:
            # The raw size is rounded up to the file alignment; the virtual size is the real one.
            out.append((raw_ptr, min(vsize, raw_size) if vsize else raw_size))
    return out

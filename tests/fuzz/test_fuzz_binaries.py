"""Property tests for the ELF and PE readers: random bytes and mutated real files never make them raise
anything but ElfError / PeError (and never hang or allocate without bound).

Budget: ORTDOCTOR_FUZZ_EXAMPLES examples per test (default 200); set it high for a long run.
"""

from __future__ import annotations

import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ortdoctor.core.facts import ElfInfo, PeInfo
from ortdoctor.formats.elf import ElfError, is_elf, read_elf
from ortdoctor.formats.pe import PeError, is_pe, read_pe
from tests.fuzz.bounds import FUZZ
from tests.fuzz.mutate import mutate
from tests.support.sharedlibs import build_so
from tests.test_pe import ORT_CUDA_IMPORTS, make_pe


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ortdoctor-fuzz-") as d:
        yield Path(d)


@pytest.fixture(scope="module")
def real_elf(scratch: Path) -> bytes:
    """A real gcc-built shared object with a soname, DT_NEEDED, RUNPATH and a dynamic string table."""
    dep = build_so(scratch / "build", "libcudart.so.13")
    lib = build_so(scratch / "build", "libonnxruntime_providers_cuda.so", needed=(dep,),
                   extra_args=("-Wl,-rpath,$ORIGIN:/opt/x", "-Wl,--enable-new-dtags"))
    return lib.read_bytes()


def _regions(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of the ELF header, the program headers and the dynamic segment of a good file."""
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    out = [(0, 64), (phoff, phoff + phentsize * phnum)]
    for i in range(phnum):
        p_type, _f, p_offset, _v, _p, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 2:
            out.append((p_offset, p_offset + p_filesz))
    return out


def _read_elf(path: Path) -> None:
    try:
        info = read_elf(path)
    except ElfError:
        return
    assert isinstance(info, ElfInfo)
    assert all(isinstance(n, str) for n in (*info.needed, *info.rpath, *info.runpath))
    is_elf(path)


def _read_pe(path: Path) -> None:
    try:
        info = read_pe(path)
    except PeError:
        return
    assert isinstance(info, PeInfo)
    assert all(isinstance(n, str) for n in info.imports)
    is_pe(path)


@FUZZ
@given(st.binary(max_size=4096))
def test_elf_random_bytes(scratch: Path, data: bytes) -> None:
    path = scratch / "random.so"
    path.write_bytes(data)
    _read_elf(path)


@FUZZ
@given(cls=st.sampled_from([1, 2, 0, 3]), order=st.sampled_from([1, 2, 0, 9]), rest=st.binary(max_size=2048))
def test_elf_random_bytes_behind_a_valid_magic(scratch: Path, cls: int, order: int, rest: bytes) -> None:
    path = scratch / "magic.so"
    path.write_bytes(b"\x7fELF" + bytes([cls, order]) + rest)
    _read_elf(path)


@FUZZ
@given(st.data())
def test_elf_mutated_real_library(scratch: Path, real_elf: bytes, data: st.DataObject) -> None:
    path = scratch / "mutated.so"
    path.write_bytes(mutate(real_elf, data, _regions(real_elf), min_edits=1))
    _read_elf(path)


def test_elf_unmutated_control(scratch: Path, real_elf: bytes) -> None:
    path = scratch / "good.so"
    path.write_bytes(real_elf)
    info = read_elf(path)
    assert info.soname == "libonnxruntime_providers_cuda.so"
    assert "libcudart.so.13" in info.needed


@FUZZ
@given(st.binary(max_size=4096))
def test_pe_random_bytes(scratch: Path, data: bytes) -> None:
    path = scratch / "random.dll"
    path.write_bytes(data)
    _read_pe(path)


@FUZZ
@given(st.binary(min_size=60, max_size=2048))
def test_pe_random_bytes_behind_mz(scratch: Path, data: bytes) -> None:
    path = scratch / "mz.dll"
    path.write_bytes(b"MZ" + data)
    _read_pe(path)


@FUZZ
@given(data=st.data(), plus=st.booleans(), n_dirs=st.integers(0, 20),
       dlls=st.lists(st.sampled_from(ORT_CUDA_IMPORTS) | st.text(min_size=1, max_size=30), max_size=12))
def test_pe_mutated_synthetic_dll(scratch: Path, data: st.DataObject, plus: bool, n_dirs: int, dlls: list[str]) -> None:
    dlls = [d.replace("\0", "") or "x.dll" for d in dlls]
    image = make_pe(dlls, plus=plus, n_dirs=n_dirs, terminate=data.draw(st.booleans(), label="terminate"))
    regions = [(0, 64), (0x80, 0x80 + 24 + 112 + 8 * n_dirs + 40), (0x400, len(image))]
    path = scratch / "mutated.dll"
    path.write_bytes(mutate(image, data, regions, min_edits=1))
    _read_pe(path)

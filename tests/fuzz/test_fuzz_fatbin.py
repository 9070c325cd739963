"""Property tests for the fatbin reader: random, truncated and corrupted libraries and DLLs only ever make
it raise FatbinError (and never hang or read without bound).

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

from ortdoctor.formats.fatbin import FatbinError, FatbinInfo, read_fatbin
from tests.fuzz.bounds import FUZZ
from tests.support.fatbins import FIXTURES, MAGIC, fatbin_containers, library, make_pe

EXTREMES = [0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
            0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF]
LIBRARIES = {name: library(name).read_bytes() for name in FIXTURES}


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ortdoctor-fuzz-fatbin-") as d:
        yield Path(d)


def _read(path: Path) -> None:
    try:
        info = read_fatbin(path)
    except FatbinError:
        return
    assert isinstance(info, FatbinInfo)
    assert all(i.kind in ("sass", "ptx") and i.count >= 1 for i in info.images)
    assert all(isinstance(name, str) for name in info.archs)


def _regions(data: bytes) -> list[tuple[int, int]]:
    """The ELF header, the section header table and the fatbin headers: where corruption matters."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    out = [(0, 64), (shoff, shoff + shentsize * shnum)]
    pos = data.find(MAGIC)
    while pos >= 0:
        out.append((pos, pos + 16 + 64))  # the container header and its first entry header
        pos = data.find(MAGIC, pos + 1)
    return out


def _mutate(data: bytes, draw: st.DataObject, regions: list[tuple[int, int]]) -> bytes:
    out = bytearray(data)
    for _ in range(draw.draw(st.integers(1, 6), label="mutations")):
        kind = draw.draw(st.sampled_from(["flip", "byte", "word", "truncate"]), label="kind")
        start, end = draw.draw(st.sampled_from([*regions, (0, len(out))]), label="region")
        end = max(start + 1, min(end, len(out)))
        if start >= len(out):
            continue
        at = draw.draw(st.integers(start, end - 1), label="offset")
        if kind == "flip":
            out[at] ^= 1 << draw.draw(st.integers(0, 7), label="bit")
        elif kind == "byte":
            out[at] = draw.draw(st.integers(0, 255), label="value")
        elif kind == "word":
            size = draw.draw(st.sampled_from([2, 4, 8]), label="size")
            value = draw.draw(st.sampled_from(EXTREMES) | st.integers(0, 2 ** (8 * size) - 1), label="word")
            out[at : at + size] = (value & (2 ** (8 * size) - 1)).to_bytes(size, "little")
        else:
            del out[at:]
    return bytes(out)


@FUZZ
@given(st.binary(max_size=4096))
def test_random_bytes(scratch: Path, data: bytes) -> None:
    path = scratch / "random.so"
    path.write_bytes(data)
    _read(path)


@FUZZ
@given(name=st.sampled_from(FIXTURES), data=st.data())
def test_truncated_library(scratch: Path, name: str, data: st.DataObject) -> None:
    lib = LIBRARIES[name]
    path = scratch / "truncated.so"
    path.write_bytes(lib[: data.draw(st.integers(0, len(lib) - 1), label="length")])
    _read(path)


@FUZZ
@given(name=st.sampled_from(FIXTURES), data=st.data())
def test_corrupted_library(scratch: Path, name: str, data: st.DataObject) -> None:
    lib = LIBRARIES[name]
    path = scratch / "corrupted.so"
    path.write_bytes(_mutate(lib, data, _regions(lib)))
    _read(path)


@FUZZ
@given(name=st.sampled_from(FIXTURES), data=st.data())
def test_corrupted_windows_dll(scratch: Path, name: str, data: st.DataObject) -> None:
    body = b"".join(fatbin_containers(LIBRARIES[name]))
    image = make_pe([(b".text", b"\xc3" * 16), (b".nv_fatb", body)])
    fatbin_at = image.find(MAGIC)
    regions = [(0, 64), (0x80, 0x80 + 24 + 240 + 80), (fatbin_at, fatbin_at + 16 + 64)]
    path = scratch / "corrupted.dll"
    path.write_bytes(_mutate(image, data, regions))
    _read(path)


@FUZZ
@given(entries=st.lists(st.tuples(st.integers(0, 20), st.sampled_from([0, 63, 64, 80, 112, 5000, 0xFFFFFFFF]),
                                  st.sampled_from(EXTREMES), st.integers(0, 200)), max_size=6),
       container_size=st.sampled_from([None, *EXTREMES]), padding=st.integers(0, 40))
def test_synthetic_fatbin_headers(scratch: Path, entries: list[tuple[int, int, int, int]],
                                  container_size: int | None, padding: int) -> None:
    """Containers written field by field with hostile sizes, inside a DLL section."""
    body = b""
    for kind, header_size, payload_size, arch in entries:
        header = bytearray(max(64, min(header_size, 128)))
        struct.pack_into("<HHIQ", header, 0, kind, 0x101, header_size, payload_size)
        struct.pack_into("<HHI", header, 24, 0, 8, arch)
        body += bytes(header) + bytes(min(payload_size, 64))
    size = len(body) if container_size is None else container_size
    container = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, size) + body
    path = scratch / "synthetic.dll"
    path.write_bytes(make_pe([(b".nv_fatb", bytes(padding) + container + bytes(padding) + container)]))
    _read(path)

"""ortdoctor.formats.pe against small synthetic PE images (PE32+ and PE32) and malformed ones."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ortdoctor.formats.pe import PeError, is_pe, read_pe

_LFANEW = 0x80
_SECTION_RVA = 0x1000
_SECTION_RAW = 0x400


def make_pe(dlls: list[str], *, plus: bool = True, machine: int = 0x8664, n_dirs: int = 16,
            terminate: bool = True) -> bytes:
    """A minimal DLL image: DOS header, PE header, one .idata section holding the import table."""
    opt_size = (112 if plus else 96) + 8 * n_dirs
    # .idata layout: descriptors, then the DLL names.
    n_desc = len(dlls) + (1 if terminate else 0)
    names_at = n_desc * 20
    names = b""
    name_rvas = []
    for dll in dlls:
        name_rvas.append(_SECTION_RVA + names_at + len(names))
        names += dll.encode() + b"\0"
    idata = b""
    for rva in name_rvas:
        idata += struct.pack("<IIIII", 0x2000, 0, 0, rva, 0x2000)  # thunks point anywhere: not read
    if terminate:
        idata += b"\0" * 20
    idata += names
    raw_size = (len(idata) + 0x1FF) & ~0x1FF

    dos = bytearray(64)
    dos[:2] = b"MZ"
    struct.pack_into("<I", dos, 0x3C, _LFANEW)
    image = bytearray(dos) + b"\0" * (_LFANEW - 64)
    image += b"PE\0\0" + struct.pack("<HHIIIHH", machine, 1, 0, 0, 0, opt_size, 0x2022)
    opt = bytearray(opt_size)
    struct.pack_into("<H", opt, 0, 0x20B if plus else 0x10B)
    count_at, dirs_at = (108, 112) if plus else (92, 96)
    struct.pack_into("<I", opt, count_at, n_dirs)
    if n_dirs > 1:
        struct.pack_into("<II", opt, dirs_at + 8, _SECTION_RVA, len(idata))
    image += opt
    section = bytearray(40)
    section[:8] = b".idata\0\0"
    struct.pack_into("<IIII", section, 8, len(idata), _SECTION_RVA, raw_size, _SECTION_RAW)
    image += section
    image += b"\0" * (_SECTION_RAW - len(image))
    image += idata + b"\0" * (raw_size - len(idata))
    return bytes(image)


ORT_CUDA_IMPORTS = ["cudart64_13.dll", "cublas64_13.dll", "cublasLt64_13.dll", "cufft64_12.dll",
                    "cudnn64_9.dll", "onnxruntime_providers_shared.dll", "KERNEL32.dll"]


def _write(tmp_path: Path, data: bytes, name: str = "x.dll") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_pe32_plus_imports(tmp_path: Path) -> None:
    path = _write(tmp_path, make_pe(ORT_CUDA_IMPORTS), "onnxruntime_providers_cuda.dll")
    info = read_pe(path)
    assert info.machine == "x86_64"
    assert info.imports == tuple(ORT_CUDA_IMPORTS)
    assert info.path == str(path)
    assert is_pe(path)


def test_pe32_and_arm64(tmp_path: Path) -> None:
    assert read_pe(_write(tmp_path, make_pe(["a.dll"], plus=False, machine=0x14C))).machine == "x86"
    info = read_pe(_write(tmp_path, make_pe(["b.dll"], machine=0xAA64), "arm.dll"))
    assert (info.machine, info.imports) == ("arm64", ("b.dll",))
    assert read_pe(_write(tmp_path, make_pe([], machine=0x1234), "o.dll")).machine == "unknown(0x1234)"


def test_no_imports(tmp_path: Path) -> None:
    assert read_pe(_write(tmp_path, make_pe([]))).imports == ()
    # Fewer data directories than the import directory's index: nothing imported, no error.
    assert read_pe(_write(tmp_path, make_pe(["a.dll"], n_dirs=1), "few.dll")).imports == ()


@pytest.mark.parametrize("size", [0, 1, 2, 63, 64, _LFANEW, _LFANEW + 10, _LFANEW + 30, 0x200, 0x410])
def test_truncated(tmp_path: Path, size: int) -> None:
    data = make_pe(ORT_CUDA_IMPORTS)[:size]
    with pytest.raises(PeError):
        read_pe(_write(tmp_path, data))


def _patch(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


@pytest.mark.parametrize(
    ("what", "offset", "fmt", "value", "message"),
    [
        ("no MZ", 0, "<H", 0x1234, "MZ"),
        ("e_lfanew past the end", 0x3C, "<I", 10_000_000, "truncated"),
        ("e_lfanew absurd", 0x3C, "<I", 0xFFFFFFF0, "implausible"),
        ("no PE signature", _LFANEW, "<I", 0x41414141, "signature"),
        ("bad optional magic", _LFANEW + 24, "<H", 0x999, "magic"),
        ("too many sections", _LFANEW + 6, "<H", 5000, "section count"),
        ("import rva outside sections", _LFANEW + 24 + 112 + 8, "<I", 0x900000, "outside every section"),
        ("tiny optional header", _LFANEW + 20, "<H", 1, "optional header"),
    ],
)
def test_malformed(tmp_path: Path, what: str, offset: int, fmt: str, value: int, message: str) -> None:
    data = _patch(make_pe(ORT_CUDA_IMPORTS), offset, fmt, value)
    with pytest.raises(PeError, match=message):
        read_pe(_write(tmp_path, data))


def test_name_rva_outside_sections(tmp_path: Path) -> None:
    data = _patch(make_pe(["a.dll"]), 0x400 + 12, "<I", 0x7FFF0000)
    with pytest.raises(PeError, match="outside every section"):
        read_pe(_write(tmp_path, data))


def test_missing_terminator_runs_into_end_of_file(tmp_path: Path) -> None:
    data = make_pe(["a.dll"], terminate=False)
    # Fill the rest of the section with descriptor-like junk so the walk runs off the file's end.
    junk = bytearray(data)
    for at in range(0x400 + 20 + 8, len(junk) - 4, 4):
        struct.pack_into("<I", junk, at, 0x01010101)
    with pytest.raises(PeError):
        read_pe(_write(tmp_path, bytes(junk)))


def test_not_a_pe(tmp_path: Path) -> None:
    text = _write(tmp_path, b"just some text, long enough to have a header " * 4, "t.dll")
    with pytest.raises(PeError, match="MZ"):
        read_pe(text)
    assert not is_pe(text)
    with pytest.raises(PeError):
        read_pe(tmp_path / "absent.dll")
    assert not is_pe(tmp_path / "absent.dll")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutations_raise_only_pe_error(tmp_path: Path, data: st.DataObject) -> None:
    image = bytearray(make_pe(ORT_CUDA_IMPORTS))
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.sampled_from([*range(0x3C, 0x40), *range(_LFANEW, _LFANEW + 400),
                                        *range(0x400, 0x400 + 200)]))
        image[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(image)))
    path = tmp_path / "m.dll"
    path.write_bytes(bytes(image[:cut]))
    try:
        read_pe(path)
    except PeError:
        pass


def test_a_fifo_named_like_a_dll_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "cudart64_13.dll"
    os.mkfifo(fifo)  # no writer: a plain open() would wait forever
    with pytest.raises(PeError, match="not a regular file"):
        read_pe(fifo)
    assert is_pe(fifo) is False

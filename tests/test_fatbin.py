"""ortdoctor.formats.fatbin on nvcc-built libraries (checked against cuobjdump), on a Windows DLL image
around their fatbins, on the real CUDA provider of onnxruntime-gpu, and on broken files."""

from __future__ import annotations

import io
import os
import struct
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from ortdoctor.formats import fatbin
from ortdoctor.formats.fatbin import FatbinError, FatbinInfo, KernelImage, read_fatbin
from ortdoctor.formats.regular_file import read_at
from tests.support import crafted, testenvs
from tests.support.fatbins import FIXTURES, cuobjdump_listing, fatbin_containers, library, make_pe
from tests.support.sharedlibs import build_so

REPO = Path(__file__).resolve().parent.parent


def _as_cuobjdump_names(info: FatbinInfo) -> Counter[tuple[str, str]]:
    """Our images in cuobjdump's words: PTX is listed as sm_XY, a family SASS target by its arch alone."""
    out: Counter[tuple[str, str]] = Counter()
    for image in info.images:
        target = image.name.replace("compute_", "sm_")
        if image.kind == "sass" and target.endswith("f"):
            target = target[:-1]
        out[(image.kind, target)] += image.count
    return out


@pytest.mark.parametrize("name", FIXTURES)
def test_every_fixture_matches_cuobjdump(name: str) -> None:
    info = read_fatbin(library(name))
    assert info.format == "elf"
    assert info.sections == 1
    assert _as_cuobjdump_names(info) == cuobjdump_listing(name)


def test_sass_only_uncompressed() -> None:
    info = read_fatbin(library("sass_only"))
    assert info.sass_archs == ("sm_75", "sm_80")
    assert info.ptx_archs == ()
    assert info.ptx_isas == ()
    assert info.archs == ("sm_75", "sm_80")
    assert not any(i.compressed for i in info.images)
    # nvcc's device-link step adds a second container with its own (empty) cubin per architecture
    assert info.containers == 2
    assert {(i.name, i.count) for i in info.images} == {("sm_75", 2), ("sm_80", 2)}
    assert all(i.ptx_isa is None for i in info.images)


def test_ptx_only_records_the_ptx_isa_of_cuda_13_0() -> None:
    info = read_fatbin(library("ptx_only"))
    assert info.sass_archs == ()
    assert info.ptx_archs == ("compute_80",)
    assert info.images == (KernelImage("ptx", 80, "compute_80", False, (9, 0), 1),)
    assert info.ptx_isas == ((9, 0),)
    assert info.archs == ("compute_80",)


@pytest.mark.parametrize("name", ["sass_ptx_zstd", "sass_ptx_speed"])
def test_both_compression_schemes_are_recognised(name: str) -> None:
    info = read_fatbin(library(name))
    assert info.images
    assert all(i.compressed for i in info.images)
    assert info.ptx_isas == ((9, 0),)


def test_sass_and_ptx() -> None:
    info = read_fatbin(library("sass_ptx_zstd"))
    assert info.sass_archs == ("sm_75", "sm_86")
    assert info.ptx_archs == ("compute_86",)
    assert info.archs == ("sm_75", "sm_86", "compute_86")
    # the kernel's container holds the PTX; the device-link container only the (empty) cubins
    assert info.target_sets == ((("sm_75", "sm_86"), 1), (("sm_75", "sm_86", "compute_86"), 1))


def test_architecture_specific_targets_keep_their_suffix() -> None:
    info = read_fatbin(library("arch_specific"))
    assert info.sass_archs == ("sm_90a", "sm_120a")
    assert info.ptx_archs == ("compute_90a",)
    assert {i.arch for i in info.images} == {90, 120}


def test_family_targets_keep_their_suffix() -> None:
    info = read_fatbin(library("family"))
    assert info.sass_archs == ("sm_100f",)
    assert info.ptx_archs == ("compute_100f",)
    assert {i.arch for i in info.images} == {100}


def test_library_without_device_code(tmp_path: Path) -> None:
    lib = build_so(tmp_path, "libplain.so")
    info = read_fatbin(lib)
    assert info == FatbinInfo(path=str(lib), format="elf", sections=0, containers=0)
    assert info.archs == ()


def test_windows_dll_with_padding_between_containers(tmp_path: Path) -> None:
    containers = fatbin_containers(library("sass_ptx_zstd").read_bytes())
    assert len(containers) == 2
    body = containers[0] + bytes(24) + containers[1]  # zero padding, as linkers align containers
    dll = tmp_path / "onnxruntime_providers_cuda.dll"
    dll.write_bytes(make_pe([(b".text", b"\xc3" * 100), (b".nv_fatb", body), (b".rdata", b"x" * 10)]))
    info = read_fatbin(dll)
    assert info.format == "pe"
    assert (info.sections, info.containers) == (1, 2)
    assert _as_cuobjdump_names(info) == cuobjdump_listing("sass_ptx_zstd")


def test_windows_dll_without_virtual_size_reads_the_raw_size(tmp_path: Path) -> None:
    body = b"".join(fatbin_containers(library("sass_only").read_bytes()))
    dll = tmp_path / "x.dll"
    dll.write_bytes(make_pe([(b".nv_fatb", body)], virtual_sizes=False))  # the rest is file-alignment zeros
    assert read_fatbin(dll).sass_archs == ("sm_75", "sm_80")


def test_windows_dll_without_device_code(tmp_path: Path) -> None:
    dll = tmp_path / "x.dll"
    dll.write_bytes(make_pe([(b".text", b"\xc3")]))
    assert read_fatbin(dll) == FatbinInfo(path=str(dll), format="pe", sections=0, containers=0)


# --------------------------------------------------------------------------------------------------
# Broken input: FatbinError and nothing else
# --------------------------------------------------------------------------------------------------
def _fatbin_offset(data: bytes) -> int:
    return data.find(struct.pack("<I", 0xBA55ED50))


@pytest.mark.parametrize("content", [b"", b"\x7fEL", b"MZ", b"#!/bin/sh\n", b"\x7fELF" + bytes(60)])
def test_not_a_library(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "x.so"
    path.write_bytes(content)
    with pytest.raises(FatbinError):
        read_fatbin(path)


def test_missing_file_directory_and_fifo(tmp_path: Path) -> None:
    with pytest.raises(FatbinError):
        read_fatbin(tmp_path / "absent.so")
    with pytest.raises(FatbinError, match="not a regular file"):
        read_fatbin(tmp_path)
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "libonnxruntime_providers_cuda.so"
        os.mkfifo(fifo)
        with pytest.raises(FatbinError, match="not a regular file"):
            read_fatbin(fifo)  # returns at once: no writer is waited for


def test_truncated_inside_the_fatbin(tmp_path: Path) -> None:
    data = library("sass_ptx_zstd").read_bytes()
    path = tmp_path / "x.so"
    path.write_bytes(data[: _fatbin_offset(data) + 100])
    with pytest.raises(FatbinError):
        read_fatbin(path)


def test_no_section_header_table(tmp_path: Path) -> None:
    data = bytearray(library("sass_only").read_bytes())
    struct.pack_into("<Q", data, 0x28, 0)  # e_shoff = 0, as sstrip leaves a library
    path = tmp_path / "x.so"
    path.write_bytes(bytes(data))
    with pytest.raises(FatbinError, match="no section header table"):
        read_fatbin(path)


@pytest.mark.parametrize(("field_at", "value", "message"), [
    (0, 0x12345678, "no fatbin header"),  # magic
    (4, 2, "unknown fatbin header"),  # container version
    (8, 1 << 40, "past the end of its section"),  # container size
    (16 + 4, 8, "implausible header size"),  # first entry's header size
    (16 + 8, 1 << 40, "past the end of its fatbin"),  # first entry's payload size
])
def test_corrupt_headers(tmp_path: Path, field_at: int, value: int, message: str) -> None:
    data = bytearray(library("sass_ptx_zstd").read_bytes())
    at = _fatbin_offset(bytes(data)) + field_at
    size = {0: 4, 4: 2, 8: 8, 20: 4, 24: 8}[field_at]
    data[at : at + size] = value.to_bytes(size, "little")
    path = tmp_path / "x.so"
    path.write_bytes(bytes(data))
    with pytest.raises(FatbinError, match=message):
        read_fatbin(path)


class _Reads:
    """fatbin.read_at, counting what the reader asks for; a request of more than 64 MB is refused
    (FatbinError) instead of being allocated."""

    def __init__(self) -> None:
        self.total = 0
        self.largest = 0

    def __call__(self, f: Any, offset: int, size: int, what: str, path: str, error: type[Exception]) -> bytes:
        self.largest = max(self.largest, size)
        if size > 64 << 20:
            raise FatbinError(f"{path}: a read of {size} bytes")
        data = read_at(f, offset, size, what, path, error)
        self.total += len(data)
        return data


def test_sparse_section_of_zeros_is_skipped_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .nv_fatbin section over 1 GB of a hole: the holes are jumped (SEEK_DATA), and where the file
    system cannot say, at most 64 MB of zeros are read (19 GB of zeros took 150 s, 64 KB a read)."""
    path = crafted.elf_with_sparse_fatbin(tmp_path / "libx.so", 1 << 30)
    reads = _Reads()
    monkeypatch.setattr(fatbin, "read_at", reads)
    with open(path, "rb") as f:
        holes = fatbin._next_data(f, 4096, 4096 + (1 << 30)) > 4096  # this file system reports holes
    if holes:
        info = read_fatbin(path)
        assert (info.sections, info.containers) == (1, 0)
    else:
        with pytest.raises(FatbinError, match="bytes of zeros"):
            read_fatbin(path)
    assert reads.total <= (64 << 20) + (1 << 20)


def test_section_count_from_section_zero_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """262,144 section headers of 65,535 bytes (the count kept in section 0): refused, not one 17 GB read."""
    path = tmp_path / "libx.so"
    path.write_bytes(crafted.elf_with_huge_section_table())
    reads = _Reads()
    monkeypatch.setattr(fatbin, "read_at", reads)
    with pytest.raises(FatbinError, match="implausible section header table"):
        read_fatbin(path)
    assert reads.largest <= 16 << 20


# --------------------------------------------------------------------------------------------------
# scripts/read_wheel.py records the archs and the TensorRT provider's DT_NEEDED
# --------------------------------------------------------------------------------------------------
def test_read_wheel_records_archs_and_tensorrt_needed(tmp_path: Path) -> None:
    libs = tmp_path / "libs"
    nvinfer = build_so(libs, "libnvinfer.so.10")
    parser = build_so(libs, "libnvonnxparser.so.10")
    trt = build_so(libs, "libonnxruntime_providers_tensorrt.so", needed=(nvinfer, parser))
    wheel = tmp_path / "onnxruntime_gpu-1.99.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("onnxruntime_gpu-1.99.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: onnxruntime-gpu\n")
        zf.write(library("sass_ptx_zstd"), "onnxruntime/capi/libonnxruntime_providers_cuda.so")
        zf.write(trt, "onnxruntime/capi/libonnxruntime_providers_tensorrt.so")
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "read_wheel.py"), str(wheel)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    facts = yaml.safe_load(proc.stdout)
    assert facts["archs"] == ["sm_75", "sm_86", "compute_86"]
    assert facts["ptx_isa"] == "9.0"  # pastes into the matrix row as it is
    assert facts["tensorrt_needed"][:2] == ["libnvinfer.so.10", "libnvonnxparser.so.10"]
    assert facts["tensorrt_needed_cuda"] == ["libnvinfer.so.10", "libnvonnxparser.so.10"]


# --------------------------------------------------------------------------------------------------
# The real CUDA provider of onnxruntime-gpu 1.31.1
# --------------------------------------------------------------------------------------------------
REAL_PROVIDER = testenvs.BASE / "ort-gpu" / "onnxruntime" / "capi" / "libonnxruntime_providers_cuda.so"


class _CountingFile(io.FileIO):
    """A file that counts the bytes read through it."""

    bytes_read = 0

    def read(self, size: int | None = -1, /) -> bytes:
        data = super().read(size)
        self.bytes_read += len(data)
        return data


@pytest.mark.realwheels
def test_real_onnxruntime_gpu_1_31_1_provider() -> None:
    # checked here, not at collection: an earlier real-wheel test may provision it in this run
    if not REAL_PROVIDER.is_file():
        pytest.skip(f"not provisioned: {REAL_PROVIDER}")
    info = read_fatbin(REAL_PROVIDER)
    # `cuobjdump --list-elf --list-ptx` (CUDA 13.5) on this file lists exactly these cubins and no PTX
    assert info.sass_archs == ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_120a")
    assert info.ptx_archs == ()
    assert info.containers == 609
    assert {i.name: i.count for i in info.images} == {"sm_75": 217, "sm_80": 308, "sm_86": 308, "sm_89": 308,
                                                      "sm_90a": 600, "sm_120a": 317}
    assert all(i.compressed for i in info.images)
    # the union hides that most kernels exist for some architectures only
    assert info.target_sets == (
        (("sm_90a",), 292),
        (("sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_120a"), 217),
        (("sm_80", "sm_86", "sm_89", "sm_90a", "sm_120a"), 91),
        (("sm_120a",), 9),
    )
    # headers only: a few hundred kilobytes of a 284 MB file
    with _CountingFile(REAL_PROVIDER, "rb") as f:
        assert fatbin._read(f, str(REAL_PROVIDER)) == info
        assert f.bytes_read < 1024 * 1024, f.bytes_read

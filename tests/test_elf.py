"""ortdoctor.formats.elf against gcc-built libraries, hand-built ELF images and malformed files."""

from __future__ import annotations

import io
import shutil
import struct
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ortdoctor.formats import elf
from ortdoctor.formats.elf import ElfError, is_elf, read_elf
from tests.support import crafted, testenvs
from tests.support.sharedlibs import build_so


@pytest.fixture(scope="module")
def libdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("elf")


@pytest.fixture(scope="module")
def chain(libdir: Path) -> tuple[Path, Path, Path]:
    a = build_so(libdir, "liba.so.1")
    b = build_so(libdir, "libb.so.2", needed=(a,))
    c = build_so(libdir, "libc_top.so.3", needed=(b, a))
    return a, b, c


def test_soname_and_needed_chain(chain: tuple[Path, Path, Path]) -> None:
    a, b, c = chain
    info_a, info_b, info_c = read_elf(a), read_elf(b), read_elf(c)
    assert info_a.soname == "liba.so.1"
    assert info_b.soname == "libb.so.2"
    assert "liba.so.1" in info_b.needed
    assert info_c.needed[:2] == ("libb.so.2", "liba.so.1")
    assert info_c.machine in ("x86_64", "aarch64")
    assert info_c.bits == 64
    assert info_c.path == str(c)
    assert is_elf(c)


def test_rpath_old_dtags(libdir: Path) -> None:
    lib = build_so(libdir / "rpath", "librp.so.1",
                   extra_args=("-Wl,--disable-new-dtags", "-Wl,-rpath,/opt/one:$ORIGIN/../lib"))
    info = read_elf(lib)
    assert info.rpath == ("/opt/one", "$ORIGIN/../lib")
    assert info.runpath == ()


def test_runpath_new_dtags(libdir: Path) -> None:
    lib = build_so(libdir / "runpath", "librun.so.1",
                   extra_args=("-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"))
    info = read_elf(lib)
    assert info.runpath == ("$ORIGIN",)
    assert info.rpath == ()


@pytest.mark.parametrize("size", [0, 1, 4, 15, 16, 40, 63, 64, 200, 1000])
def test_truncated_files_raise_elf_error(chain: tuple[Path, Path, Path], tmp_path: Path, size: int) -> None:
    data = chain[2].read_bytes()
    cut = tmp_path / "cut.so"
    cut.write_bytes(data[:size])
    with pytest.raises(ElfError):
        read_elf(cut)


def test_text_file_and_missing_file(tmp_path: Path) -> None:
    text = tmp_path / "notes.so"
    text.write_text("INPUT(-lfoo)\n")  # a linker script named like a library
    with pytest.raises(ElfError, match="not an ELF"):
        read_elf(text)
    assert not is_elf(text)
    with pytest.raises(ElfError):
        read_elf(tmp_path / "absent.so")
    assert not is_elf(tmp_path / "absent.so")


def _patched(src: Path, dst: Path, offset: int, fmt: str, value: int) -> Path:
    data = bytearray(src.read_bytes())
    struct.pack_into(fmt, data, offset, value)
    dst.write_bytes(bytes(data))
    return dst


def test_patched_machine_is_reported(chain: tuple[Path, Path, Path], tmp_path: Path) -> None:
    aarch = _patched(chain[1], tmp_path / "arm.so", 18, "<H", 183)
    info = read_elf(aarch)
    assert info.machine == "aarch64"
    assert info.soname == "libb.so.2"
    odd = _patched(chain[1], tmp_path / "odd.so", 18, "<H", 4242)
    assert read_elf(odd).machine == "unknown(4242)"


@pytest.mark.parametrize(
    ("what", "offset", "fmt", "value"),
    [
        ("class 32 on a 64-bit body", 4, "B", 1),
        ("big-endian flag on a little-endian body", 5, "B", 2),
        ("unknown class", 4, "B", 7),
        ("unknown byte order", 5, "B", 9),
        ("program headers past the end", 32, "<Q", 1 << 40),
        ("huge program header count", 56, "<H", 60000),
        ("tiny program header entries", 54, "<H", 8),
    ],
)
def test_patched_headers_raise_only_elf_error(
    chain: tuple[Path, Path, Path], tmp_path: Path, what: str, offset: int, fmt: str, value: int
) -> None:
    bad = _patched(chain[2], tmp_path / "bad.so", offset, fmt, value)
    try:
        read_elf(bad)
    except ElfError:
        pass  # the expected outcome for most; a reinterpretation that happens to parse is fine too


def test_dynamic_segment_outside_file(chain: tuple[Path, Path, Path], tmp_path: Path) -> None:
    data = bytearray(chain[2].read_bytes())
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    for i in range(phnum):
        at = phoff + i * phentsize
        if struct.unpack_from("<I", data, at)[0] == 2:  # PT_DYNAMIC
            struct.pack_into("<Q", data, at + 8, len(data) + 4096)  # p_offset past the end
    bad = tmp_path / "dyn.so"
    bad.write_bytes(bytes(data))
    with pytest.raises(ElfError, match="truncated"):
        read_elf(bad)


# ---------------------------------------------------------------------------------------------
# Hand-built images: 32-bit and big-endian shared objects this machine's gcc cannot produce.
# ---------------------------------------------------------------------------------------------
def _make_elf(bits: int, big: bool, machine: int, soname: str, needed: list[str], runpath: str = "") -> bytes:
    end = ">" if big else "<"
    strtab = b"\0"
    offsets: dict[str, int] = {}
    for s in [soname, *needed, *([runpath] if runpath else [])]:
        offsets[s] = len(strtab)
        strtab += s.encode() + b"\0"
    ehsize, phentsize = (64, 56) if bits == 64 else (52, 32)
    phoff = ehsize
    strtab_off = phoff + 2 * phentsize
    dyn_off = strtab_off + len(strtab) + (-(strtab_off + len(strtab)) % 8)
    dyn = [(1, offsets[n]) for n in needed] + [(14, offsets[soname])]
    if runpath:
        dyn.append((29, offsets[runpath]))
    dyn += [(5, strtab_off), (10, len(strtab)), (0, 0)]
    dyn_fmt = end + ("qQ" if bits == 64 else "iI")
    dyn_bytes = b"".join(struct.pack(dyn_fmt, t, v) for t, v in dyn)
    total = dyn_off + len(dyn_bytes)
    ident = b"\x7fELF" + bytes([1 if bits == 32 else 2, 2 if big else 1, 1]) + b"\0" * 9
    if bits == 64:
        hdr = struct.pack(end + "HHIQQQIHHHHHH", 3, machine, 1, 0, phoff, 0, 0, ehsize, phentsize, 2, 0, 0, 0)
        load = struct.pack(end + "IIQQQQQQ", 1, 5, 0, 0, 0, total, total, 0x1000)
        dynph = struct.pack(end + "IIQQQQQQ", 2, 6, dyn_off, dyn_off, dyn_off, len(dyn_bytes), len(dyn_bytes), 8)
    else:
        hdr = struct.pack(end + "HHIIIIIHHHHHH", 3, machine, 1, 0, phoff, 0, 0, ehsize, phentsize, 2, 0, 0, 0)
        load = struct.pack(end + "IIIIIIII", 1, 0, 0, 0, total, total, 5, 0x1000)
        dynph = struct.pack(end + "IIIIIIII", 2, dyn_off, dyn_off, dyn_off, len(dyn_bytes), len(dyn_bytes), 6, 4)
    image = ident + hdr + load + dynph + strtab
    image += b"\0" * (dyn_off - len(image)) + dyn_bytes
    assert len(image) == total
    return image


@pytest.mark.parametrize(
    ("bits", "big", "machine", "name"),
    [(32, False, 3, "x86"), (64, True, 22, "s390x"), (32, True, 20, "ppc"), (64, False, 183, "aarch64")],
)
def test_hand_built_images(tmp_path: Path, bits: int, big: bool, machine: int, name: str) -> None:
    path = tmp_path / "lib.so"
    path.write_bytes(_make_elf(bits, big, machine, "libhand.so.7", ["libcudart.so.13", "libc.so.6"], "$ORIGIN"))
    info = read_elf(path)
    assert (info.bits, info.machine, info.soname) == (bits, name, "libhand.so.7")
    assert info.needed == ("libcudart.so.13", "libc.so.6")
    assert info.runpath == ("$ORIGIN",)


def test_string_offset_outside_table(tmp_path: Path) -> None:
    image = bytearray(_make_elf(64, False, 62, "libs.so.1", ["libneed.so.1"]))
    # The first dynamic entry is DT_NEEDED; point its string outside the string table.
    dyn_at = image.rfind(struct.pack("<qQ", 14, 1 + len("libneed.so.1") + 1)) - 16
    struct.pack_into("<qQ", image, dyn_at, 1, 10_000)
    path = tmp_path / "s.so"
    path.write_bytes(bytes(image))
    with pytest.raises(ElfError, match="string"):
        read_elf(path)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_real_library_raises_only_elf_error(
    chain: tuple[Path, Path, Path], libdir: Path, data: st.DataObject
) -> None:
    image = bytearray(chain[1].read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, 255))  # the ELF and program headers
        image[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(16, len(image)))
    target = libdir / "mutated.so"
    target.write_bytes(bytes(image[:cut]))
    try:
        read_elf(target)
    except ElfError:
        pass


class _CountingFile(io.FileIO):
    """A file that counts the bytes read through it."""

    bytes_read = 0

    def read(self, size: int | None = -1, /) -> bytes:
        data = super().read(size)
        self.bytes_read += len(data)
        return data


@pytest.mark.realwheels
def test_real_cuda_provider_needed_and_bounded_reads() -> None:
    provider = testenvs.ensure("ort-gpu") / "onnxruntime" / "capi" / "libonnxruntime_providers_cuda.so"
    info = read_elf(provider)
    assert info.machine == "x86_64"
    assert info.needed == (
        "libcublasLt.so.13", "libcublas.so.13", "libcurand.so.10", "libcudart.so.13", "libcuda.so.1",
        "libdl.so.2", "librt.so.1", "libpthread.so.0", "libstdc++.so.6", "libm.so.6", "libgcc_s.so.1",
        "libc.so.6", "ld-linux-x86-64.so.2",
    )
    assert provider.stat().st_size > 100 * 1024 * 1024
    with _CountingFile(provider, "rb") as f:
        assert elf._read(f, str(provider)) == info
        assert f.bytes_read < 64 * 1024, f.bytes_read


def test_reads_through_a_symlink(chain: tuple[Path, Path, Path], tmp_path: Path) -> None:
    link = tmp_path / "liba.so"
    link.symlink_to(chain[0])
    assert read_elf(link).soname == "liba.so.1"
    copy = tmp_path / "copy.so"
    shutil.copyfile(chain[0], copy)
    assert read_elf(copy).soname == "liba.so.1"


# ---------------------------------------------------------------------------------------------
# Amplification: headers that ask for far more memory than the file holds
# ---------------------------------------------------------------------------------------------
def _peak_bytes(call: Callable[[], object]) -> int:
    """The most memory Python allocated at once while ``call`` ran."""
    tracemalloc.start()
    try:
        call()
    except ElfError:
        pass
    finally:
        _now, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


def test_needed_entries_naming_one_long_string_decode_it_once(tmp_path: Path) -> None:
    """256 DT_NEEDED entries naming one 1 MB string: decoded once (each entry a copy cost 256 MB; the
    full-size file, 65,533 entries and 16 MB, asked for a terabyte)."""
    path = tmp_path / "libcudart.so.13"
    path.write_bytes(crafted.elf_needed_bomb(256, 1 << 20))
    info = read_elf(path)
    assert len(info.needed) == 256
    assert len({id(n) for n in info.needed}) == 1  # one string, named 256 times
    assert _peak_bytes(lambda: read_elf(path)) < 8 << 20


def test_needed_entries_naming_overlapping_strings_are_bounded(tmp_path: Path) -> None:
    """4,096 entries each one byte further into one unterminated 1 MB string: ElfError once the names
    take more than the table holds (each entry a copy: 4 GB)."""
    path = tmp_path / "libcudart.so.13"
    path.write_bytes(crafted.elf_needed_bomb(4096, 1 << 20, distinct=True))
    with pytest.raises(ElfError, match="more string bytes than the string table holds"):
        read_elf(path)
    assert _peak_bytes(lambda: read_elf(path)) < 8 << 20


def test_program_header_table_larger_than_the_file(tmp_path: Path) -> None:
    """4,096 program headers of 65,535 bytes claimed by a 64-byte file: refused before 268 MB are asked for."""
    path = tmp_path / "libx.so"
    path.write_bytes(crafted.elf_huge_program_header_table())
    with pytest.raises(ElfError, match="truncated"):
        read_elf(path)
    assert _peak_bytes(lambda: read_elf(path)) < 1 << 20

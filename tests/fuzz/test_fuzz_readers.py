"""A fuzz target per reader, seeded from real files: the libraries of the real onnxruntime-gpu and NVIDIA
wheels, their RECORD and METADATA, this machine's ld.so.cache and /proc/self/maps, numpy's own .npy files
and the exported models in tests/data/models, plus the crafted inputs that were once a crash, a hang or
gigabytes (tests/support/crafted.py). Each asserts that only the reader's documented error escapes, and
each example runs under a time limit.

Budget: see tests/fuzz/bounds.py.
"""

from __future__ import annotations

import os
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ortdoctor.formats.distinfo import DistIndex, RecordEntry, _parse_metadata, _parse_record
from ortdoctor.formats.elf import ElfError, is_elf, read_elf
from ortdoctor.formats.elf_rodata import find_marked_string
from ortdoctor.formats.fatbin import FatbinError, FatbinInfo, read_fatbin
from ortdoctor.formats.ldcache import LdCacheError, read_ld_cache
from ortdoctor.formats.npy import NpyError, NpyHeader, read_npy_header
from ortdoctor.formats.pe import PeError, is_pe, read_pe
from ortdoctor.formats.procmaps import MappedObject, mapped_objects
from ortdoctor.formats.realpath import real_path, remembered_realpaths
from ortdoctor.prove.model_check.inspect import ModelInspection, inspect_model
from tests.fuzz.bounds import FUZZ, FUZZ_HEAVY, within
from tests.fuzz.mutate import mutate
from tests.support import crafted, testenvs
from tests.support.sharedlibs import build_so

ROOT = Path(__file__).resolve().parents[2]
MARKER = b"ORT Build Info: "
LD_CACHE = Path("/etc/ld.so.cache")


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ortdoctor-fuzz-readers-") as d:
        yield Path(d)


# --------------------------------------------------------------------------------------------------
# Mutations
# --------------------------------------------------------------------------------------------------


def _elf_regions(data: bytes) -> list[tuple[int, int]]:
    """The ELF header, program headers, dynamic segment, section header table and section names."""
    phoff, shoff = struct.unpack_from("<QQ", data, 32)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", data, 54)
    out = [(0, 64), (phoff, phoff + phentsize * phnum), (shoff, shoff + shentsize * shnum)]
    for i in range(phnum):
        p_type, _f, p_offset, _v, _p, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 2:
            out.append((p_offset, p_offset + p_filesz))
    if shstrndx < shnum:
        str_off, str_size = struct.unpack_from("<QQ", data, shoff + shstrndx * shentsize + 24)
        out.append((str_off, str_off + min(str_size, 4096)))
    return out


# --------------------------------------------------------------------------------------------------
# The binary readers on the real wheels' libraries: ELF, fatbin, .rodata
# --------------------------------------------------------------------------------------------------
REAL_LIBRARIES = {
    "libonnxruntime_providers_shared.so": ("ort-gpu", "onnxruntime/capi/libonnxruntime_providers_shared.so"),
    "libonnxruntime_providers_tensorrt.so": ("ort-gpu", "onnxruntime/capi/libonnxruntime_providers_tensorrt.so"),
    "libcudart.so.13": ("nvidia-cu13", "nvidia/cu13/lib/libcudart.so.13"),
}


@pytest.fixture(scope="module")
def real_libraries() -> dict[str, bytes]:
    return {name: (testenvs.ensure(env) / rel).read_bytes() for name, (env, rel) in REAL_LIBRARIES.items()}


def _read_binary(path: Path) -> None:
    """Each binary reader on one file: its own error or a well-formed result."""
    with within():
        try:
            info = read_elf(path)
        except ElfError:
            pass
        else:
            assert all(isinstance(n, str) for n in (*info.needed, *info.rpath, *info.runpath))
        try:
            fat = read_fatbin(path)
        except FatbinError:
            pass
        else:
            assert isinstance(fat, FatbinInfo)
        found = find_marked_string(path, MARKER)
        assert found is None or found.startswith(MARKER.decode())
        assert isinstance(is_elf(path), bool)


@pytest.mark.realwheels
@FUZZ_HEAVY
@given(name=st.sampled_from(sorted(REAL_LIBRARIES)), data=st.data())
def test_binary_readers_on_mutated_wheel_libraries(scratch: Path, real_libraries: dict[str, bytes], name: str,
                                                   data: st.DataObject) -> None:
    lib = real_libraries[name]
    path = scratch / name
    path.write_bytes(mutate(lib, data, _elf_regions(lib)))
    _read_binary(path)


@pytest.fixture(scope="module")
def marked_library(scratch: Path) -> bytes:
    """A gcc-built library whose .rodata holds a build-info string, as onnxruntime's pybind module does."""
    source = ('const char *ort_build_info(void) { return "ORT Build Info: git-branch=rel-1.31.1, '
              'cuda-plugin-ep=1, build type=Release"; }\n')
    return build_so(scratch / "marked", "libmarked.so", source=source).read_bytes()


def test_rodata_unmutated_control(scratch: Path, marked_library: bytes) -> None:
    path = scratch / "control.so"
    path.write_bytes(marked_library)
    assert find_marked_string(path, MARKER) == "ORT Build Info: git-branch=rel-1.31.1, cuda-plugin-ep=1, build type=Release"


@FUZZ
@given(data=st.data())
def test_rodata_on_a_mutated_marked_library(scratch: Path, marked_library: bytes, data: st.DataObject) -> None:
    path = scratch / "marked.so"
    path.write_bytes(mutate(marked_library, data, _elf_regions(marked_library)))
    _read_binary(path)


def test_crafted_binaries(scratch: Path) -> None:
    """The ELF whose DT_NEEDED entries name one long string, its overlapping variant, a program header
    table larger than the file, a fatbin section over a hole and a 17 GB section table."""
    cases = {
        "bomb.so": crafted.elf_needed_bomb(4096, 1 << 16),
        "overlap.so": crafted.elf_needed_bomb(4096, 1 << 16, distinct=True),
        "phdrs.so": crafted.elf_huge_program_header_table(),
        "sections.so": crafted.elf_with_huge_section_table(),
    }
    for name, blob in cases.items():
        (scratch / name).write_bytes(blob)
        _read_binary(scratch / name)
    _read_binary(crafted.elf_with_sparse_fatbin(scratch / "sparse.so", 1 << 30))


# --------------------------------------------------------------------------------------------------
# PE: the Windows launchers pip and setuptools ship (real linkers' output, 32- and 64-bit, x86 and arm64)
# --------------------------------------------------------------------------------------------------
def _launchers() -> dict[str, bytes]:
    import importlib.util

    out: dict[str, bytes] = {}
    for package in ("pip", "setuptools"):  # found, not imported (setuptools warns on import)
        spec = importlib.util.find_spec(package)
        for where in (spec.submodule_search_locations or []) if spec else []:
            for exe in sorted(Path(where).rglob("*.exe")):
                out[f"{package}/{exe.name}"] = exe.read_bytes()
    return out


LAUNCHERS = _launchers()


@pytest.mark.skipif(not LAUNCHERS, reason="no Windows launchers in pip or setuptools here")
@FUZZ
@given(data=st.data())
def test_pe_on_mutated_real_launchers(scratch: Path, data: st.DataObject) -> None:
    image = LAUNCHERS[data.draw(st.sampled_from(sorted(LAUNCHERS)), label="seed")]
    (lfanew,) = struct.unpack_from("<I", image, 0x3C)
    path = scratch / "launcher.exe"
    path.write_bytes(mutate(image, data, [(0, 64), (lfanew, lfanew + 24 + 240 + 40 * 8)]))
    with within():
        try:
            info = read_pe(path)
        except PeError:
            pass
        else:
            assert all(isinstance(n, str) for n in info.imports)
        try:
            read_fatbin(path)
        except FatbinError:
            pass
        assert isinstance(is_pe(path), bool)


# --------------------------------------------------------------------------------------------------
# RECORD and METADATA of the real wheels, through the index the probes use
# --------------------------------------------------------------------------------------------------
ODD = st.sampled_from(["\u00b2", "\u0663", "9" * 5000, '"', '""', ",", ",,", "\n", "\r", "\0", "\\", "sha256=",
                       "-1", " ", "\ufeff", "\udcff", "é", "Name: x\n", "Version:\n", "\n\n"]) | st.text(max_size=8)


@pytest.fixture(scope="module")
def real_dist_texts() -> dict[str, str]:
    """RECORD and METADATA of the onnxruntime-gpu and NVIDIA wheels, as pip installed them."""
    out: dict[str, str] = {}
    for env in ("ort-gpu", "nvidia-cu13"):
        for dist_info in sorted(testenvs.ensure(env).glob("*.dist-info")):
            for name in ("RECORD", "METADATA"):
                text = (dist_info / name).read_text(encoding="utf-8")
                out[f"{dist_info.name}/{name}"] = text[:20000]  # the heads: rows are alike
    return out


def _edit_text(text: str, data: st.DataObject) -> str:
    for _ in range(data.draw(st.integers(1, 6), label="edits")):
        at = data.draw(st.integers(0, len(text)), label="at")
        kind = data.draw(st.sampled_from(["insert", "replace", "delete", "truncate", "row"]), label="kind")
        if kind == "row":  # a whole row whose fields are odd: "nvidia/cu13/lib/x,,²" was one
            fields = [data.draw(ODD, label="field") for _ in range(3)]
            text = text[:at] + "\nnvidia/cu13/lib/x," + ",".join(fields[1:]) + "\n" + text[at:]
        elif kind == "insert":
            text = text[:at] + data.draw(ODD, label="odd") + text[at:]
        elif kind == "replace":
            text = text[:at] + data.draw(ODD, label="odd") + text[at + data.draw(st.integers(1, 20), label="n"):]
        elif kind == "delete":
            text = text[:at] + text[at + data.draw(st.integers(1, 40), label="n"):]
        else:
            text = text[:at]
    return text


@pytest.mark.realwheels
@FUZZ
@given(data=st.data())
def test_dist_info_from_mutated_real_records(scratch: Path, real_dist_texts: dict[str, str],
                                             data: st.DataObject) -> None:
    record = _edit_text(real_dist_texts[data.draw(st.sampled_from(sorted(k for k in real_dist_texts
                                                                         if k.endswith("RECORD"))), label="r")], data)
    metadata = _edit_text(real_dist_texts[data.draw(st.sampled_from(sorted(k for k in real_dist_texts
                                                                           if k.endswith("METADATA"))), label="m")],
                          data)
    # the parsers alone: RECORD's only error is the csv module's, for quoted text
    meta = _parse_metadata(metadata)
    assert meta.name is None or isinstance(meta.name, str)
    try:
        rows = _parse_record(record)
    except ValueError:
        assert '"' in record
    else:
        assert all(isinstance(r.path, str) and r.path for r in rows)
        assert all(r.size is None or (isinstance(r.size, int) and r.size >= 0) for r in rows)
    # and through the index, as the probes and the hook read them: never raises
    site = scratch / "site"
    dist_info = site / "nvidia_cublas-13.1.0.3.dist-info"
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "RECORD").write_bytes(record.encode("utf-8", "surrogateescape"))
    (dist_info / "METADATA").write_bytes(metadata.encode("utf-8", "surrogateescape"))
    with within():
        index = DistIndex([str(site)])
        dist = index.load(index.refs[0])
        entries = dist.record
        assert entries is None or all(isinstance(e, RecordEntry) for e in entries)
        assert all(isinstance(p, str) for p in dist.files())


# --------------------------------------------------------------------------------------------------
# .npy headers: numpy's own files, in each format version
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def npy_files(scratch: Path) -> dict[str, bytes]:
    np = pytest.importorskip("numpy")
    out: dict[str, bytes] = dict(crafted.NPY_CRAFTED)
    arrays = {"int64": np.zeros((2, 3), np.int64), "float16": np.ones((1,), np.float16),
              "scalar": np.zeros((), np.bool_), "fortran": np.asfortranarray(np.zeros((2, 3), np.uint8)),
              "structured": np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")])}
    for name, array in arrays.items():
        path = scratch / f"{name}.npy"
        np.save(path, array)
        out[name] = path.read_bytes()
        header = out[name][10:]  # the same header in the version 2 and 3 layouts (a 4-byte length)
        length = int.from_bytes(out[name][8:10], "little")
        for version in (2, 3):
            out[f"{name}-v{version}"] = (b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<I", length)
                                         + header)
    return out


@FUZZ
@given(data=st.data())
def test_npy_on_mutated_numpy_files(scratch: Path, npy_files: dict[str, bytes], data: st.DataObject) -> None:
    blob = npy_files[data.draw(st.sampled_from(sorted(npy_files)), label="seed")]
    path = scratch / "mutated.npy"
    path.write_bytes(mutate(blob, data, [(0, 12), (12, min(len(blob), 140))]))
    with within():
        try:
            header = read_npy_header(path)
        except NpyError:
            return
    assert isinstance(header, NpyHeader)
    assert all(isinstance(d, int) for d in header.shape)


# --------------------------------------------------------------------------------------------------
# ld.so.cache: this machine's, and the crafted one, through the file reader
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ld_caches() -> dict[str, bytes]:
    out = {"crafted": crafted.ld_cache_bomb(64, 4096), "crafted-overlapping": crafted.ld_cache_bomb(64, 4096,
                                                                                                     distinct=True)}
    if LD_CACHE.is_file():
        out["this machine"] = LD_CACHE.read_bytes()
    return out


@FUZZ
@given(data=st.data(), machine=st.sampled_from([None, "x86_64", "aarch64", "sparc"]))
def test_ld_cache_file_mutations(scratch: Path, ld_caches: dict[str, bytes], data: st.DataObject,
                                 machine: str | None) -> None:
    blob = ld_caches[data.draw(st.sampled_from(sorted(ld_caches)), label="seed")]
    path = scratch / "ld.so.cache"
    path.write_bytes(mutate(blob, data, [(0, 48), (48, min(len(blob), 48 + 24 * 64))]))
    with within():
        try:
            cache = read_ld_cache(str(path), machine)
        except LdCacheError:
            return
    assert all(isinstance(k, str) and all(isinstance(p, str) for p in v) for k, v in cache.items())


# --------------------------------------------------------------------------------------------------
# /proc/<pid>/maps: this process's own, edited
# --------------------------------------------------------------------------------------------------
MAPS_ODD = st.sampled_from(["\0", "\u00b2", "9" * 5000, " (deleted)", "/", "//", "/..", " ", "\n", "lib.so.1",
                            "/proc/self/mem", "\udcff", "0"]) | st.text(max_size=12)


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="no /proc")
@FUZZ
@given(data=st.data())
def test_procmaps_on_edited_real_maps(scratch: Path, data: st.DataObject) -> None:
    text = Path("/proc/self/maps").read_text(encoding="utf-8", errors="surrogateescape")[:8000]
    for _ in range(data.draw(st.integers(1, 8), label="edits")):
        at = data.draw(st.integers(0, len(text)), label="at")
        text = text[:at] + data.draw(MAPS_ODD, label="odd") + text[at + data.draw(st.integers(0, 8), label="n"):]
    path = scratch / "maps"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with within(), remembered_realpaths():
        found = mapped_objects(str(path))
    assert all(isinstance(m, MappedObject) and isinstance(m.path, str) for m in found)


@FUZZ
@given(parts=st.lists(st.sampled_from(["a", "..", ".", "", "loop", "lib.so", "\udcff", "x" * 300]) | st.text(max_size=6),
                      max_size=8))
@example(parts=["loop", "\0"])  # past a symlink loop realpath stops reading components (a CI failure)
def test_realpath_never_raises_without_a_nul(scratch: Path, parts: list[str]) -> None:
    tree = scratch / "tree"
    if not tree.exists():
        tree.mkdir()
        (tree / "loop").symlink_to("loop")
        (tree / "a").mkdir()
    path = str(tree) + "/" + "/".join(parts)
    with within():
        for resolve in (real_path, _remembered):
            if "\0" in path:
                with pytest.raises(ValueError, match="null"):
                    resolve(path)
            else:
                assert isinstance(resolve(path), str)


def _remembered(path: str) -> str:
    with remembered_realpaths():
        return real_path(path)


# --------------------------------------------------------------------------------------------------
# The ONNX inspector: the exported models of tests/data/models
# --------------------------------------------------------------------------------------------------
EXPORTED = {p.name: p.read_bytes() for p in sorted((ROOT / "tests" / "data" / "models").glob("*.onnx"))}


@FUZZ_HEAVY
@given(name=st.sampled_from(sorted(EXPORTED)), data=st.data())
def test_inspect_mutated_exported_models(scratch: Path, name: str, data: st.DataObject) -> None:
    blob = EXPORTED[name]
    path = scratch / "mutated.onnx"
    path.write_bytes(mutate(blob, data, [(0, 64), (0, min(len(blob), 4096)), (len(blob) - 256, len(blob))]))
    with within():
        found = inspect_model(path)
    assert isinstance(found, ModelInspection)
    assert found.problem in (None, "invalid", "truncated", "unreadable")

"""The loader: real dlopen (through the gate) of gcc-built libraries in child processes, /proc/self/maps
proof, "already loaded?" from /proc/self/maps, version functions; plus the pure parts (version encodings,
ld.so.cache, MSVC list)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ortdoctor.formats.ldcache import try_read_ld_cache
from ortdoctor.preloading import loader
from tests.test_preload_helpers import build_cuda_libs, child_json, run_child


@pytest.mark.parametrize(
    ("function", "raw", "expected"),
    [
        ("cudaRuntimeGetVersion", 13000, "13.0"),
        ("cudaRuntimeGetVersion", 12090, "12.9"),
        ("cudnnGetVersion", 91900, "9.19.0"),
        ("cudnnGetVersion", 8907, "8.9.7"),  # cuDNN 8 uses 1000*major
        ("cublasLtGetVersion", 130100, "13.1.0"),
        ("cublasGetVersion_v2", 11401, "11.4.1"),  # cuBLAS 11 uses 1000*major
        ("cufftGetVersion", 12000, "12.0.0"),
        ("cufftGetVersion", 11305, "11.3.5"),
        ("curandGetVersion", 10400, "10.4.0"),
        ("nvrtcVersion", (13, 0), "13.0"),
    ],
)
def test_decode_version(function: str, raw: int | tuple[int, int], expected: str) -> None:
    assert loader.decode_version(function, raw) == expected


def test_missing_msvc_runtime_is_case_insensitive() -> None:
    assert loader.missing_msvc_runtime(["VCRUNTIME140.dll", "msvcp140.dll"]) == ["vcruntime140_1.dll"]
    assert loader.missing_msvc_runtime([]) == list(loader.MSVC_RUNTIME_DLLS)
    assert loader.check_msvc_runtime() == []  # nothing to check off Windows
    assert loader.add_dll_directories(["/x"]) == []


@pytest.mark.skipif(shutil.which("ldconfig") is None and not Path("/sbin/ldconfig").exists(),
                    reason="no ldconfig to compare with")
def test_ld_so_cache_matches_ldconfig() -> None:
    exe = shutil.which("ldconfig") or "/sbin/ldconfig"
    out = subprocess.run([exe, "-p"], capture_output=True, text=True, check=True).stdout
    expected: set[tuple[str, str]] = set()
    for line in out.splitlines()[1:]:
        if "=>" in line:
            left, path = line.split("=>")
            expected.add((left.split()[0], path.strip()))
    ours = {(k, p) for k, paths in try_read_ld_cache().items() for p in paths}
    assert expected
    assert ours == expected


def test_ld_so_cache_absent_or_garbage(tmp_path: Path) -> None:
    assert try_read_ld_cache(str(tmp_path / "none")) == {}
    (tmp_path / "junk").write_bytes(b"glibc-ld.so.cache1.1" + b"\xff" * 10)
    assert try_read_ld_cache(str(tmp_path / "junk")) == {}


def test_load_refuses_relative_paths() -> None:
    with pytest.raises(loader.LoadError, match="relative"):
        loader.load("libcudart.so.13")


def test_already_loaded_never_asks_the_loader_by_name(tmp_path: Path) -> None:
    """A FIFO named like the library in the current directory, with an empty LD_LIBRARY_PATH entry: asking
    the dynamic loader by bare soname would open it and block; the answer comes from /proc/self/maps."""
    os.mkfifo(tmp_path / "libcublasLt.so.13")
    code = "from ortdoctor.preloading import loader\nprint(loader.already_loaded('libcublasLt.so.13'))\n"
    proc = run_child(code, pythonpath=[], cwd=tmp_path, env={"LD_LIBRARY_PATH": ":/usr/lib"}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "None"


def test_load_verify_noload_and_versions_in_a_child(tmp_path: Path) -> None:
    libs = build_cuda_libs(tmp_path / "lib")
    code = f"""
import json, os
from ortdoctor.preloading import loader
out = {{}}
out['before'] = loader.already_loaded('libcublas.so.13')
lt = loader.load({str(libs['libcublasLt.so.13'])!r})
bl = loader.load({str(libs['libcublas.so.13'])!r})
rt = loader.load({str(libs['libcudart.so.13'])!r}, global_=True)
out['after'] = loader.already_loaded('libcublas.so.13')
out['mapped'] = [lt.mapped.path, bl.mapped.path, rt.mapped.path]
out['inode_ok'] = lt.mapped.inode == os.stat({str(libs['libcublasLt.so.13'])!r}).st_ino
out['versions'] = [loader.library_version(lt.handle, 'cublasLtGetVersion'),
                   loader.library_version(bl.handle, 'cublasGetVersion_v2'),
                   loader.library_version(rt.handle, 'cudaRuntimeGetVersion'),
                   loader.library_version(rt.handle, 'noSuchFunction')]
try:
    loader.load({str(tmp_path / 'missing.so')!r})
except loader.LoadError as exc:
    out['error'] = str(exc)
print(json.dumps(out))
"""
    got = child_json(run_child(code, pythonpath=[]))
    assert got["before"] is None
    assert got["after"] == str(libs["libcublas.so.13"])
    assert got["mapped"] == [str(libs[s]) for s in ("libcublasLt.so.13", "libcublas.so.13", "libcudart.so.13")]
    assert got["inode_ok"] is True
    assert got["versions"] == ["13.1.0", "13.1.0", "13.0", None]
    assert "missing.so" in got["error"]


def test_maps_parser_reads_this_process() -> None:
    paths = loader.mapped_paths()
    assert any("libc.so" in p or "libc-" in p for p in paths)
    assert loader.mapped_file("/nonexistent/libx.so") is None

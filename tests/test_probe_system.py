"""probe_system: the ld.so cache parsed in Python, LD_LIBRARY_PATH annotations, default dirs, PATH."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from ortdoctor.formats.ldcache import LdCacheError, parse_ld_cache, read_ld_cache
from ortdoctor.probes.system import annotate_dir, probe_system
from tests.support.sharedlibs import build_so

LDCONFIG = shutil.which("ldconfig") or ("/sbin/ldconfig" if os.path.exists("/sbin/ldconfig") else None)


def _ldconfig_p(cache: str) -> list[tuple[str, str]]:
    assert LDCONFIG is not None
    out = subprocess.run([LDCONFIG, "-C", cache, "-p"], capture_output=True, text=True, check=True).stdout
    pairs = []
    for line in out.splitlines()[1:]:
        if " => " in line:
            left, path = line.split(" => ", 1)
            pairs.append((left.strip().split(" (", 1)[0], path))
    return pairs


@pytest.mark.skipif(LDCONFIG is None or not os.path.exists("/etc/ld.so.cache"), reason="needs glibc ld.so.cache")
def test_system_cache_matches_ldconfig_p() -> None:
    ours = read_ld_cache("/etc/ld.so.cache")  # no machine filter: every entry, as ldconfig -p lists
    flat = [(k, p) for k, paths in ours.items() for p in paths]
    theirs = _ldconfig_p("/etc/ld.so.cache")
    assert sorted(flat) == sorted(theirs)
    assert "libc.so.6" in ours


def test_generated_cache_with_our_libraries(tmp_path: Path) -> None:
    if LDCONFIG is None:
        pytest.skip("ldconfig is needed to generate a cache fixture")
    libdir = tmp_path / "lib"
    build_so(libdir, "libcudart.so.13", filename="libcudart.so.13.0.96")
    build_so(libdir, "libcudnn.so.9", filename="libcudnn.so.9.19.0")
    conf = tmp_path / "ld.so.conf"
    conf.write_text(f"{libdir}\n")
    cache = tmp_path / "ld.so.cache"
    proc = subprocess.run([LDCONFIG, "-C", str(cache), "-f", str(conf)], capture_output=True, text=True)
    if proc.returncode != 0 or not cache.exists():
        pytest.skip(f"ldconfig could not write a cache here: {proc.stderr.strip()}")
    parsed = read_ld_cache(str(cache), "x86_64" if os.uname().machine == "x86_64" else None)
    assert parsed["libcudart.so.13"] == (str(libdir / "libcudart.so.13"),)
    assert parsed["libcudnn.so.9"] == (str(libdir / "libcudnn.so.9"),)
    info = probe_system({}, ld_cache_path=str(cache))
    assert info.ldconfig["libcudart.so.13"] == (str(libdir / "libcudart.so.13"),)
    assert info.problems == ()


def _new_format(entries: list[tuple[int, str, str]], big: bool = False) -> bytes:
    end = ">" if big else "<"
    header_len = 48
    table_len = 24 * len(entries)
    strings = b""
    rows = b""
    for flags, key, value in entries:
        k = header_len + table_len + len(strings)
        strings += key.encode() + b"\0"
        v = header_len + table_len + len(strings)
        strings += value.encode() + b"\0"
        rows += struct.pack(end + "iIIIQ", flags, k, v, 0, 0)
    header = b"glibc-ld.so.cache1.1" + struct.pack(end + "II", len(entries), len(strings))
    header += bytes([3 if big else 2, 0, 0, 0]) + struct.pack(end + "IIII", 0, 0, 0, 0)
    return header + rows + strings


def _old_format(entries: list[tuple[int, str, str]]) -> bytes:
    strings = b""
    rows = b""
    for flags, key, value in entries:
        k = len(strings)
        strings += key.encode() + b"\0"
        v = len(strings)
        strings += value.encode() + b"\0"
        rows += struct.pack("<iII", flags, k, v)
    return b"ld.so-1.7.0\0" + struct.pack("<I", len(entries)) + rows + strings


ENTRIES = [(0x0303, "libcudart.so.13", "/opt/a/libcudart.so.13"), (0x0303, "libcudart.so.13", "/opt/b/libcudart.so.13"),
           (0x0003, "libfoo32.so.1", "/lib32/libfoo32.so.1"), (0x0A03, "libarm.so.1", "/lib/aarch64/libarm.so.1")]


def test_new_format_order_and_arch_filter() -> None:
    data = _new_format(ENTRIES)
    parsed = parse_ld_cache(data, "x86_64")
    assert parsed == {"libcudart.so.13": ("/opt/a/libcudart.so.13", "/opt/b/libcudart.so.13")}
    assert set(parse_ld_cache(data)) == {"libcudart.so.13", "libfoo32.so.1", "libarm.so.1"}
    assert parse_ld_cache(data, "aarch64") == {"libarm.so.1": ("/lib/aarch64/libarm.so.1",)}
    assert parse_ld_cache(_new_format(ENTRIES, big=True), "x86_64") == parsed


def test_old_format_alone_and_combined() -> None:
    old = _old_format(ENTRIES)
    assert parse_ld_cache(old, "x86_64")["libcudart.so.13"] == ("/opt/a/libcudart.so.13", "/opt/b/libcudart.so.13")
    # glibc's combined layout: old header and entries, then (aligned) the new block, whose string
    # table the old entries also point into (old offsets count from the end of the old entries).
    new_block = _new_format(ENTRIES[:1])
    _flags, key, value, _os, _hw = struct.unpack_from("<iIIIQ", new_block, 48)
    old_head = b"ld.so-1.7.0\0" + struct.pack("<I", 1)
    pad = b"\0" * (-(len(old_head) + 12) % 8)
    combined = old_head + struct.pack("<iII", 0x0303, len(pad) + key, len(pad) + value) + pad + new_block
    assert parse_ld_cache(combined, "x86_64") == {"libcudart.so.13": ("/opt/a/libcudart.so.13",)}


@pytest.mark.parametrize("data", [b"", b"garbage", b"glibc-ld.so.cache1.1\x05", _new_format(ENTRIES)[:60],
                                  _new_format(ENTRIES)[:-5], b"ld.so-1.7.0\0\xff\xff\xff\x00"])
def test_corrupt_caches_raise_ld_cache_error(data: bytes) -> None:
    with pytest.raises(LdCacheError):
        parse_ld_cache(data)


def test_unreadable_cache_is_a_problem(tmp_path: Path) -> None:
    bad = tmp_path / "cache"
    bad.write_bytes(b"not a cache")
    info = probe_system({}, ld_cache_path=str(bad))
    assert info.ldconfig == {}
    assert len(info.problems) == 1
    assert "could not be read" in info.problems[0]
    missing = probe_system({}, ld_cache_path=str(tmp_path / "absent"))
    assert "does not exist" in missing.problems[0]


def test_ld_library_path_annotations(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.mkdir(mode=0o755)
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    (tmp_path / "rel").mkdir()
    env = {"LD_LIBRARY_PATH": f"{good}::rel:{tmp_path / 'missing'}:{open_dir}:/usr/local/cuda-12.4/lib64:",
           "CUDA_HOME": "/usr/local/cuda", "CUDNN_PATH": "/opt/cudnn", "CONDA_PREFIX": "/opt/conda"}
    info = probe_system(env, ld_cache_path=None, default_dirs=(), cwd=str(tmp_path))
    entries = info.ld_library_path
    assert [e.path for e in entries] == [str(good), "", "rel", str(tmp_path / "missing"), str(open_dir),
                                         "/usr/local/cuda-12.4/lib64", ""]
    assert all(e.origin == "LD_LIBRARY_PATH" for e in entries)
    assert entries[0].exists
    assert not entries[0].relative
    assert not entries[0].world_writable
    assert entries[1].relative
    assert entries[1].note == "empty entry = current directory"
    assert entries[2].relative
    assert entries[2].exists  # resolved against cwd, as the loader does
    assert not entries[3].exists
    assert entries[4].world_writable
    assert entries[6].note == "empty entry = current directory"  # the trailing ":"
    assert (info.cuda_home, info.cudnn_path, info.conda_prefix) == ("/usr/local/cuda", "/opt/cudnn", "/opt/conda")


def test_foreign_owner(tmp_path: Path) -> None:
    d = tmp_path / "theirs"
    d.mkdir()
    st = d.stat()
    # Seen by someone who is neither root nor the owner, the directory is foreign.
    assert annotate_dir(str(d), "LD_LIBRARY_PATH", uid=st.st_uid + 4242).foreign_owner is (st.st_uid != 0)
    assert annotate_dir(str(d), "LD_LIBRARY_PATH", uid=st.st_uid).foreign_owner is False


def test_toolkit_note_and_default_dirs(tmp_path: Path) -> None:
    tk = tmp_path / "cuda-12.4" / "lib64"
    tk.mkdir(parents=True)
    assert annotate_dir(str(tk), "CUDA_HOME").note == "CUDA 12.4 toolkit"
    info = probe_system({}, ld_cache_path=None, default_dirs=[str(tmp_path), str(tmp_path / "none")])
    assert [(d.path, d.origin, d.exists) for d in info.default_dirs] == [
        (str(tmp_path), "default", True), (str(tmp_path / "none"), "default", False)]
    assert info.ld_library_path == ()


def test_real_default_dirs() -> None:
    info = probe_system({}, ld_cache_path=None)
    paths = [d.path for d in info.default_dirs]
    assert {"/lib", "/usr/lib", "/lib64", "/usr/lib64"} <= set(paths)


def test_windows_path(tmp_path: Path) -> None:
    env = {"PATH": f"{tmp_path};;C:\\Program Files\\NVIDIA\\CUDNN\\v9.1\\bin\\12.4", "LD_LIBRARY_PATH": "/x"}
    info = probe_system(env, os_name="windows", ld_cache_path=None)
    assert [d.path for d in info.windows_path] == [str(tmp_path), "C:\\Program Files\\NVIDIA\\CUDNN\\v9.1\\bin\\12.4"]
    assert info.windows_path[0].exists
    assert info.ld_library_path == ()
    assert info.default_dirs == ()

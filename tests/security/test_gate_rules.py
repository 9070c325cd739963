"""The gate's rules one by one (``ortdoctor/native/gate.py``), on real files and gcc-built libraries.

Loads happen in a child process, so this test process never maps what it builds; the judgements that
need no load run here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ortdoctor.native import gate
from tests.faults import helpers
from tests.support.sharedlibs import build_so

ATTACKER = 12345


def _lib(directory: Path, soname: str = "libgatetest.so.1") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o755)
    return build_so(directory, soname)


# --------------------------------------------------------------------------------------------------
# Rules 1-4: the path
# --------------------------------------------------------------------------------------------------
def test_ordinary_layouts_pass(tmp_path: Path) -> None:
    """A venv under a private home, a --target directory under sticky /tmp, the system's own directory."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    assert gate.refusal(str(_lib(home / "venv" / "lib" / "site-packages" / "nvidia" / "cu13" / "lib"))) is None
    assert gate.refusal(str(_lib(tmp_path / "target"))) is None  # /tmp is 1777: sticky is fine
    libz = next((p for p in ("/usr/lib/x86_64-linux-gnu/libz.so.1", "/lib64/libz.so.1", "/usr/lib64/libz.so.1")
                 if os.path.exists(p)), None)
    if libz is not None:
        assert gate.refusal(libz) is None


def test_relative_paths_are_refused() -> None:
    for path in ("libz.so.1", "./libz.so.1", "lib/libz.so.1", ""):
        assert "relative" in (gate.refusal(path) or ""), path


def test_a_world_writable_ancestor_is_refused_and_named(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    lib = _lib(shared / "cuda" / "lib64")
    os.chmod(shared, 0o777)
    why = gate.refusal(str(lib)) or ""
    assert f"world-writable directory {shared}" in why, why
    assert "above" in why
    os.chmod(shared, 0o1777)  # sticky: only an entry's owner may rename it
    assert gate.refusal(str(lib)) is None


def test_a_foreign_owned_ancestor_or_file_is_refused(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("needs root, to hand a directory to another uid")
    lib = _lib(tmp_path / "theirs" / "lib")
    os.chown(tmp_path / "theirs", ATTACKER, ATTACKER)
    assert f"owned by another user (uid {ATTACKER})" in (gate.refusal(str(lib)) or "")
    os.chown(tmp_path / "theirs", 0, 0)
    os.chown(lib, ATTACKER, ATTACKER)
    assert f"file {lib} owned by another user" in (gate.refusal(str(lib)) or "")
    assert gate.refusal(str(lib), allow_unsafe=True) is None  # the override lifts this rule only


def test_a_symlink_is_judged_where_it_leads(tmp_path: Path) -> None:
    ww = tmp_path / "ww"
    lib = _lib(ww)
    os.chmod(ww, 0o777)
    safe = tmp_path / "safe"
    safe.mkdir()
    (safe / lib.name).symlink_to(lib)
    assert "world-writable directory" in (gate.refusal(str(safe / lib.name)) or "")


def test_the_current_directory_only_when_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = tmp_path / "here"
    lib = _lib(here)
    monkeypatch.chdir(here)
    assert "current directory" in (gate.refusal(str(lib)) or "")
    assert "current directory" in (gate.refusal(str(lib), allow_unsafe=True) or "")  # never lifted
    assert gate.refusal(str(lib), named=[str(here)]) is None


# --------------------------------------------------------------------------------------------------
# Rules 5-6: the file
# --------------------------------------------------------------------------------------------------
def test_not_a_regular_file_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "libcublasLt.so.13"
    os.mkfifo(fifo)
    assert "not a regular file" in (gate.refusal(str(fifo)) or "")  # returns: a blocking open would not
    assert "not a regular file" in (gate.refusal("/dev/null") or "")
    assert "not a regular file" in (gate.refusal(str(tmp_path)) or "")


def test_the_load_extent_of_a_real_library(tmp_path: Path) -> None:
    lib = _lib(tmp_path / "lib")
    fd = os.open(lib, os.O_RDONLY)
    try:
        extent = gate.elf_extent(fd)
    finally:
        os.close(fd)
    size = lib.stat().st_size
    assert extent is not None
    assert 0 < extent <= size
    # the section headers (not mapped) sit after the segments: cutting them off is harmless, and the
    # first byte of the last segment's file part is not
    os.truncate(lib, extent)
    assert gate.refusal(str(lib)) is None
    os.truncate(lib, extent - 1)
    assert "truncated" in (gate.refusal(str(lib)) or "")
    os.truncate(lib, 40)
    assert "damaged" in (gate.refusal(str(lib)) or "")


def test_a_file_that_is_not_elf_is_left_to_the_loader(tmp_path: Path) -> None:
    d = tmp_path / "lib"
    d.mkdir()
    (d / "libtext.so.1").write_text("not a library\n")
    assert gate.refusal(str(d / "libtext.so.1")) is None


# --------------------------------------------------------------------------------------------------
# Rule 7: the file checked is the file mapped (in a child)
# --------------------------------------------------------------------------------------------------
CHILD = """import json, os, sys
from ortdoctor.native import gate
path = sys.argv[1]
got = gate.load(path)
st = os.stat(os.path.realpath(path))
dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}"
before = gate.mapped_copy("libgatetest.so.1")
try:
    gate.load(sys.argv[2])
    second = "loaded"
except gate.Refused as exc:
    second = exc.kind
print(json.dumps({"verified": got.verified, "device": got.device, "inode": got.inode, "dev": dev,
                  "ino": st.st_ino, "real": got.real, "copy": before, "second": second}))
"""


def test_load_proves_the_device_and_inode_it_checked(tmp_path: Path) -> None:
    lib = _lib(tmp_path / "real")
    link_dir = tmp_path / "links"
    link_dir.mkdir()
    (link_dir / "libgatetest.so.1").symlink_to(lib)
    ww = tmp_path / "ww"
    other = _lib(ww, "libgateother.so.1")
    os.chmod(ww, 0o777)
    env = helpers.clean_env({"PYTHONPATH": str(helpers.ROOT)})
    out = subprocess.run([sys.executable, "-c", CHILD, str(link_dir / "libgatetest.so.1"), str(other)],
                         env=env, cwd="/", capture_output=True, text=True, timeout=60, check=True)
    data = json.loads(out.stdout)
    assert data["verified"] is True
    assert (data["device"], data["inode"]) == (data["dev"], data["ino"])
    assert data["real"] == str(lib)  # the real path is what is dlopen'ed
    assert data["copy"] == str(lib)  # "already loaded?" from /proc/self/maps
    assert data["second"] == "unsafe"


def test_no_copy_is_reported_for_a_soname_nobody_loaded() -> None:
    assert gate.mapped_copy("libnothing-like-this.so.77") is None
    assert gate.mapped_copy("libc.so.6") is not None  # this interpreter's own C library
    # the hook's text search answers as mapped_copy does
    for soname in ("libc.so.6", "libc.so", "libnothing-like-this.so.77", "libc", "ibc.so.6"):
        assert gate.any_mapped([soname]) == (gate.mapped_copy(soname) is not None), soname
    text = gate.maps_text()
    assert text is not None
    libc = os.stat(gate.mapped_copy("libc.so.6") or "")
    assert [r[5] for r in gate.rows_with_inode(text, libc.st_ino)]
    assert gate.rows_with_inode(text, 1) == []


SWAP_CHILD = """import ctypes, json, os, sys
from ortdoctor.native import gate
checked, intruder, good = sys.argv[1:4]
real_cdll = ctypes.CDLL
def swapping(name, mode=0):
    os.replace(intruder, name)  # another file takes the checked path between the check and the map
    return real_cdll(name, mode=mode)
ctypes.CDLL = swapping
swapped = gate.load(checked, prove_now=False)
ctypes.CDLL = real_cdll
kept = gate.load(good, prove_now=False)
before = [swapped.mapped_path, kept.mapped_path]
rows = gate.prove([swapped, kept])
print(json.dumps({"before": before, "swapped": swapped.verified, "kept": kept.verified, "rows": rows is not None}))
"""


def test_a_batch_proved_once_still_reports_a_swapped_file(tmp_path: Path) -> None:
    """One read of /proc/self/maps after a batch of loads proves each of them: a file swapped between
    the check and the map is still reported (its checked device and inode are not mapped)."""
    checked = _lib(tmp_path / "a", "libgateswap.so.1")
    intruder = _lib(tmp_path / "b", "libgateswap.so.1")
    good = _lib(tmp_path / "c", "libgategood.so.1")
    env = helpers.clean_env({"PYTHONPATH": str(helpers.ROOT)})
    out = subprocess.run([sys.executable, "-c", SWAP_CHILD, str(checked), str(intruder), str(good)],
                         env=env, cwd="/", capture_output=True, text=True, timeout=60, check=True)
    data = json.loads(out.stdout)
    assert data["before"] == [None, None]  # nothing proved until prove()
    assert data["rows"] is True
    assert data["swapped"] is False
    assert data["kept"] is True


def test_a_scoped_override_lifts_the_rule_only_under_its_directories(tmp_path: Path) -> None:
    ww = tmp_path / "ww"
    lib = _lib(ww / "lib")
    os.chmod(ww, 0o777)
    assert "world-writable" in (gate.refusal(str(lib)) or "")
    # under the named directory (the unsafe ancestor's rule included), and only there
    assert gate.refusal(str(lib), allow_unsafe=gate.allowance([str(ww / "lib")])) is None
    assert gate.refusal(str(lib), allow_unsafe=gate.allowance([str(ww)])) is None
    sibling = tmp_path / "ww-lib"
    sibling.mkdir()
    assert "world-writable" in (gate.refusal(str(lib), allow_unsafe=gate.allowance([str(sibling)])) or "")
    assert "world-writable" in (gate.refusal(str(lib), allow_unsafe=gate.allowance([])) or "")
    assert not gate.covers(gate.allowance([str(ww / "li")]), str(lib))  # a path prefix is not a directory
    with pytest.raises(ValueError, match="absolute"):
        gate.allowance(["lib"])
    assert gate.allowance(True) is True

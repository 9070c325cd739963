"""Planted libraries: a gcc-built ``libcudart.so.13`` whose constructor writes a marker file the moment
anything loads it, put where an attacker could: the current directory, a relative ``--directory``, a
world-writable directory (with and without the sticky bit), behind a symlink into /tmp, a directory
owned by another user, and empty or relative LD_LIBRARY_PATH entries. None is loaded without
``--allow-unsafe-dirs`` (no marker, and the child's own /proc/self/maps lacks the file), each is
reported, and with the override the world-writable one IS loaded: proof the test can see a load."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.faults import helpers
from tests.faults.conftest import Case
from tests.support.sharedlibs import VERSION_SOURCES, build_so

SONAME = "libcudart.so.13"
PLANTED_SOURCE = """#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen("%s", "a");
    if (f) { fputs("the planted library was loaded\\n", f); fclose(f); }
}
int cudaRuntimeGetVersion(int *v) { *v = 13000; return 0; }
"""

# Runs the real CLI and, at exit, copies the process's own /proc/self/maps next to the marker.
DRIVER = """import atexit, sys
maps_out = sys.argv[1]
def _dump():
    with open("/proc/self/maps") as src, open(maps_out, "w") as dst:
        dst.write(src.read())
atexit.register(_dump)
sys.argv = ["ortdoctor", *sys.argv[2:]]
from ortdoctor.cli.main import main
main()
"""


class Plant:
    """Where markers and the maps dump go: outside the snapshotted tree."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.marker = root / "LOADED"
        self.maps = root / "maps.txt"
        self.driver = root / "driver.py"
        self.driver.write_text(DRIVER)

    def build(self, directory: Path, *, owner: int | None = None) -> Path:
        """Compile the planted library into ``directory`` (created), optionally owned by ``owner``."""
        directory.mkdir(parents=True, exist_ok=True)
        mode = directory.stat().st_mode & 0o7777
        os.chmod(directory, 0o755)
        lib = build_so(directory, SONAME, source=PLANTED_SOURCE % self.marker)
        os.chmod(directory, mode)
        if owner is not None:
            os.chown(lib, owner, owner)
        return lib

    def loaded(self) -> bool:
        return self.marker.exists()

    def mapped(self) -> str:
        return self.maps.read_text() if self.maps.exists() else ""

    def reset(self) -> None:
        for p in (self.marker, self.maps):
            if p.exists():
                p.unlink()


@pytest.fixture
def plant(tmp_path: Path) -> Plant:
    return Plant(tmp_path)


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A fresh directory directly under /tmp (the place attackers share with everyone)."""
    d = Path(tempfile.mkdtemp(prefix="ortdoctor-sec-", dir="/tmp"))
    try:
        yield d
    finally:
        helpers.remove_tree(d)


def _site_without_cudart(case: Case) -> Path:
    """The healthy site minus its own libcudart.so.13, so a planted copy is the one to tempt the resolver."""
    site = case.gpu_site()
    (site / helpers.CU13_LIB / SONAME).unlink()
    return site


def _preload(case: Case, plant: Plant, *args: str, env: dict[str, str | None] | None = None,
             expect: tuple[int, ...] = (0, 1)) -> dict[str, Any]:
    before = helpers.snapshot(case.base)
    res = helpers.run_cli(["preload", "--json", *args], sites=[case.site], cwd=case.cwd, env=env,
                          argv0=[sys.executable, str(plant.driver), str(plant.maps)])
    helpers.assert_unchanged(before, helpers.snapshot(case.base))
    assert res.returncode in expect, res.text
    data: dict[str, Any] = json.loads(res.stdout) if res.stdout.strip() else {"stderr": res.stderr}
    data["_stderr"] = res.stderr
    return data


def _check_candidates(case: Case, *args: str, env: dict[str, str | None] | None = None) -> list[dict[str, Any]]:
    res = case.run("check", "--json", "--no-smoke", *args, env=env)
    lib = next(x for x in res.data["libraries"] if x["name"] == "cudart")
    return list(lib["candidates"])


def _assert_not_loaded(plant: Plant, planted: Path) -> None:
    assert not plant.loaded(), "the planted library's constructor ran"
    maps = plant.mapped()
    assert maps, "the driver did not dump /proc/self/maps"
    assert str(planted) not in maps
    assert os.path.realpath(planted) not in maps


def _ids(data: dict[str, Any]) -> list[str]:
    return [f["id"] for f in data.get("findings", [])]


def _loaded_cudart(data: dict[str, Any]) -> str | None:
    return next((x["path"] for x in data.get("loaded", []) if x["name"] == "cudart"), None)


# --------------------------------------------------------------------------------------------------
# The current directory
# --------------------------------------------------------------------------------------------------
def test_planted_in_the_current_directory(case: Case, plant: Plant) -> None:
    _site_without_cudart(case)
    planted = plant.build(case.cwd)
    for directory in ((), ("--directory", "")):
        data = _preload(case, plant, *directory)
        _assert_not_loaded(plant, planted)
        assert _loaded_cudart(data) != str(planted)


@pytest.mark.parametrize("value", ["", ":", "::/nonexistent", ".", "./", "lib/..:"],
                         ids=["empty", "colon", "leading-empty", "dot", "dot-slash", "relative-and-empty"])
def test_planted_in_the_current_directory_named_by_ld_library_path(case: Case, plant: Plant, value: str) -> None:
    _site_without_cudart(case)
    (case.cwd / "lib").mkdir()
    planted = plant.build(case.cwd)
    data = _preload(case, plant, env={"LD_LIBRARY_PATH": value})
    _assert_not_loaded(plant, planted)
    if value:  # an LD_LIBRARY_PATH of "" is the same as none for the loader: nothing to report
        assert "ld-library-path-unsafe-entry" in _ids(data), _ids(data)


def test_current_directory_given_as_an_absolute_ld_library_path_entry(case: Case, plant: Plant) -> None:
    _site_without_cudart(case)
    planted = plant.build(case.cwd)
    env: dict[str, str | None] = {"LD_LIBRARY_PATH": str(case.cwd)}
    data = _preload(case, plant, env=env)
    _assert_not_loaded(plant, planted)
    assert _loaded_cudart(data) != str(planted)
    rejected = [c for c in _check_candidates(case, env=env) if c["path"] == str(planted)]
    assert rejected, rejected
    assert rejected[0]["rejected"] == "in the current directory", rejected


def test_planted_wheel_layout_in_the_current_directory_with_safe_path(case: Case, plant: Plant) -> None:
    """A whole fake NVIDIA wheel in the cwd. `python -m` puts the cwd on sys.path (Python itself then
    imports from it); with -P (PYTHONSAFEPATH), as the `ortdoctor` command runs, it is never searched."""
    _site_without_cudart(case)
    (case.cwd / "nvidia_cuda_runtime-13.0.96.dist-info").mkdir()
    planted = plant.build(case.cwd / "nvidia" / "cu13" / "lib")
    before = helpers.snapshot(case.base)
    res = helpers.run_cli(["preload", "--json", "--directory", ""], sites=[case.site], cwd=case.cwd,
                          argv0=[sys.executable, "-P", str(plant.driver), str(plant.maps)])
    helpers.assert_unchanged(before, helpers.snapshot(case.base))
    assert res.returncode in (0, 1)
    _assert_not_loaded(plant, planted)


# --------------------------------------------------------------------------------------------------
# A relative --directory: relative to the onnxruntime package, never to the cwd
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("directory", ["lib", ".", "./", "nvidia/cu13/lib"])
def test_relative_directory_is_never_the_current_directory(case: Case, plant: Plant, directory: str) -> None:
    site = _site_without_cudart(case)
    planted = [plant.build(case.cwd), plant.build(case.cwd / "lib"), plant.build(case.cwd / "nvidia/cu13/lib")]
    data = _preload(case, plant, "--directory", directory, expect=(0, 1, 2))
    for p in planted:
        _assert_not_loaded(plant, p)
    if "loaded" not in data:  # exit 2: the message names where a relative directory is looked for
        assert str(site / "onnxruntime") in data["_stderr"]


# --------------------------------------------------------------------------------------------------
# World-writable, sticky, foreign-owned, symlinked
# --------------------------------------------------------------------------------------------------
def test_world_writable_directory_is_refused_and_loaded_only_with_the_override(case: Case, plant: Plant) -> None:
    _site_without_cudart(case)
    ww = case.base / "world-writable"
    planted = plant.build(ww)
    os.chmod(ww, 0o777)
    data = _preload(case, plant, "--directory", str(ww))
    _assert_not_loaded(plant, planted)
    unsafe = [f for f in data["findings"] if f["id"] == "unsafe-library-dir"]
    assert unsafe
    assert str(ww) in unsafe[0]["detail"]
    assert "--allow-unsafe-dirs" in unsafe[0]["fix"]
    plant.reset()
    data = _preload(case, plant, "--directory", str(ww), "--allow-unsafe-dirs")
    assert plant.loaded(), "with the override the planted library must load: the detector works"
    assert str(planted) in plant.mapped()
    assert _loaded_cudart(data) == str(planted)


def test_world_writable_sticky_directory_with_a_file_planted_by_another_user(case: Case, plant: Plant) -> None:
    """/tmp-like (mode 1777): anyone may add files; a file owned by another user is refused."""
    ids = helpers.nobody()
    if ids is None:
        pytest.skip("needs a `nobody` user")
    _site_without_cudart(case)
    sticky = case.base / "sticky"
    planted = plant.build(sticky, owner=ids[0])
    os.chmod(sticky, 0o1777)
    data = _preload(case, plant, "--directory", str(sticky))
    _assert_not_loaded(plant, planted)
    assert "unsafe-library-dir" in _ids(data)
    reasons = [c["rejected"] or "" for c in _check_candidates(case, "--directory", str(sticky))
               if c["path"] == str(planted)]
    assert reasons, reasons
    assert "owned by another user" in reasons[0], reasons


def test_directory_owned_by_another_user(case: Case, plant: Plant) -> None:
    ids = helpers.nobody()
    if ids is None or os.getuid() != 0:
        pytest.skip("needs root and a `nobody` user to hand a directory to")
    _site_without_cudart(case)
    foreign = case.base / "foreign"
    planted = plant.build(foreign)
    os.chown(foreign, *ids)
    data = _preload(case, plant, "--directory", str(foreign))
    _assert_not_loaded(plant, planted)
    unsafe = [f for f in data["findings"] if f["id"] == "unsafe-library-dir"]
    assert unsafe
    assert "owned by another user" in unsafe[0]["detail"]


def test_library_symlinked_into_a_world_writable_directory_under_tmp(case: Case, plant: Plant,
                                                                    shared_tmp: Path) -> None:
    """The wheel's libcudart.so.13 is a symlink into /tmp: judged by where it really lives."""
    site = _site_without_cudart(case)
    planted = plant.build(shared_tmp)
    os.chmod(shared_tmp, 0o777)
    (site / helpers.CU13_LIB / SONAME).symlink_to(planted)
    data = _preload(case, plant, "--directory", "")
    _assert_not_loaded(plant, planted)
    assert "unsafe-library-dir" in _ids(data)
    reasons = [c["rejected"] or "" for c in _check_candidates(case, "--directory", "")
               if c["path"].endswith(f"/nvidia/cu13/lib/{SONAME}")]
    assert reasons, reasons
    assert "world-writable" in reasons[0], reasons


def test_directory_symlinked_into_tmp(case: Case, plant: Plant, shared_tmp: Path) -> None:
    """--directory names a harmless-looking path that is a symlink to a world-writable directory in /tmp."""
    _site_without_cudart(case)
    planted = plant.build(shared_tmp)
    os.chmod(shared_tmp, 0o777)
    link = case.base / "cuda-libs"
    link.symlink_to(shared_tmp)
    data = _preload(case, plant, "--directory", str(link))
    _assert_not_loaded(plant, planted)
    unsafe = [f for f in data["findings"] if f["id"] == "unsafe-library-dir"]
    assert unsafe
    assert str(shared_tmp) in unsafe[0]["detail"]


def test_file_planted_in_tmp_itself_by_another_user(case: Case, plant: Plant) -> None:
    """A symlink to a file in /tmp (sticky, root-owned) that another user created."""
    ids = helpers.nobody()
    if ids is None:
        pytest.skip("needs a `nobody` user")
    site = _site_without_cudart(case)
    build_dir = Path(tempfile.mkdtemp(prefix="ortdoctor-sec-build-"))
    try:
        built = plant.build(build_dir)
        in_tmp = Path(tempfile.mktemp(prefix="ortdoctor-planted-", suffix=".so.13", dir="/tmp"))
        shutil.copyfile(built, in_tmp)
        os.chown(in_tmp, ids[0], ids[1])
        (site / helpers.CU13_LIB / SONAME).symlink_to(in_tmp)
        data = _preload(case, plant, "--directory", "")
        _assert_not_loaded(plant, in_tmp)
        assert "unsafe-library-dir" in _ids(data)
    finally:
        helpers.remove_tree(build_dir)
        if "in_tmp" in locals() and in_tmp.exists():
            in_tmp.unlink()


def test_world_writable_site_packages_is_refused(case: Case, plant: Plant) -> None:
    """The NVIDIA wheel's own lib directory made world-writable (a careless chmod -R 777)."""
    site = _site_without_cudart(case)
    lib_dir = site / helpers.CU13_LIB
    planted = plant.build(lib_dir)
    os.chmod(lib_dir, 0o777)
    data = _preload(case, plant, "--directory", "")
    _assert_not_loaded(plant, planted)
    assert "unsafe-library-dir" in _ids(data)
    # the other libraries of that directory are refused too: the whole directory is untrusted
    assert not any(x["path"].startswith(str(lib_dir)) for x in data["loaded"])


# --------------------------------------------------------------------------------------------------
# The driver's own library: NVML is loaded by name in the main process of `check`
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [":", ".", ":/nonexistent"], ids=["empty", "dot", "leading-empty"])
def test_planted_nvml_in_the_current_directory(case: Case, plant: Plant, value: str) -> None:
    case.gpu_site()
    nvml = build_so(case.cwd, "libnvidia-ml.so.1", source=PLANTED_SOURCE.replace(
        "int cudaRuntimeGetVersion(int *v) { *v = 13000; return 0; }", "") % plant.marker)
    before = helpers.snapshot(case.base)
    res = helpers.run_cli(["check", "--json", "--no-smoke"], sites=[case.site], cwd=case.cwd,
                          env={"LD_LIBRARY_PATH": value},
                          argv0=[sys.executable, str(plant.driver), str(plant.maps)])
    helpers.assert_unchanged(before, helpers.snapshot(case.base))
    assert res.returncode == 1
    _assert_not_loaded(plant, nvml)
    assert res.data["driver"]["available"] is False


# --------------------------------------------------------------------------------------------------
# The hook's decision cache names files to dlopen: a forged one must not be trusted
# --------------------------------------------------------------------------------------------------
def _forge_cache(cache_dir: Path, planted: Path) -> Path:
    import marshal

    (cache_file,) = list(cache_dir.glob("hook-*.bin"))
    fmt, key, _stamps, _loads, result_json = marshal.loads(cache_file.read_bytes())
    forged = [("libcudart.so.13", str(planted), planted.stat().st_ino)]
    cache_file.write_bytes(marshal.dumps((fmt, key, [], forged, result_json)))
    return cache_file


def test_hook_cache_written_by_another_user_is_not_trusted(case: Case, plant: Plant, shared_tmp: Path) -> None:
    ids = helpers.nobody()
    if ids is None or os.getuid() != 0:
        pytest.skip("needs root and a `nobody` user")
    _site_without_cudart(case)
    planted = plant.build(case.base / "elsewhere")
    cache_dir = shared_tmp / "cache"
    env: dict[str, str | None] = {"ORTDOCTOR_CACHE": None, "ORTDOCTOR_CACHE_DIR": str(cache_dir),
                                  "LD_LIBRARY_PATH": None}
    hook_driver = plant.root / "hook_driver.py"
    hook_driver.write_text(DRIVER.replace('sys.argv = ["ortdoctor", *sys.argv[2:]]\nfrom ortdoctor.cli.main import main\n'
                                          'main()\n', "import ortdoctor.hook\n"))

    def run_hook() -> None:
        res = helpers.run_cli([], sites=[case.site], cwd=case.cwd, env=env,
                              argv0=[sys.executable, str(hook_driver), str(plant.maps)])
        assert res.returncode == 0, res.text

    # the rest of the set must load cleanly for the hook to write its cache: put a real cudart beside it
    real = build_so(plant.root / "real", SONAME, source=VERSION_SOURCES[SONAME])
    shutil.copyfile(real, case.site / helpers.CU13_LIB / SONAME)
    run_hook()
    cache_file = _forge_cache(cache_dir, planted)
    os.chown(cache_file, *ids)
    plant.reset()
    run_hook()
    _assert_not_loaded(plant, planted)
    # control: the same forgery owned by this user is replayed, so the test does see a load (the run
    # above replaced the refused file with a fresh cache of its own: forge again)
    _forge_cache(cache_dir, planted)
    plant.reset()
    run_hook()
    assert plant.loaded()

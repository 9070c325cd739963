"""Library files that are not what their names say: truncated, empty, not ELF, another architecture,
a directory, a symlink loop, a dangling link, a FIFO, a socket, a file whose read fails."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.faults import helpers
from tests.faults.conftest import Case
from tests.faults.helpers import CU13_LIB, PROVIDER, Result

EM_AARCH64 = 183


def _check(case: Case, **kw: object) -> Result:
    return case.run("check", "--json", "--no-smoke", **kw)  # type: ignore[arg-type]


def _lib(res: Result, name: str) -> dict[str, Any]:
    libs: list[dict[str, Any]] = res.data["libraries"]
    return next(lib for lib in libs if lib["name"] == name)


def _set_machine(path: Path, machine: int) -> None:
    data = bytearray(path.read_bytes())
    data[18:20] = machine.to_bytes(2, "little")  # e_machine of a little-endian ELF header
    path.write_bytes(bytes(data))


# --------------------------------------------------------------------------------------------------
# The CUDA provider library itself
# --------------------------------------------------------------------------------------------------
def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[:100])


def _empty(p: Path) -> None:
    p.write_bytes(b"")


def _not_elf(p: Path) -> None:
    p.write_text("/* GNU ld script */\nINPUT ( libonnxruntime_providers_cuda.so.1 )\n")


def _io_error(p: Path) -> None:
    p.unlink()
    p.symlink_to("/proc/self/mem")  # a regular file that opens, and whose first read fails (EIO)


@pytest.mark.parametrize("damage", [_truncate, _empty, _not_elf, _io_error],
                         ids=["truncated", "zero-byte", "not-elf", "read-error"])
def test_provider_library_unreadable(case: Case, damage: Callable[[Path], None]) -> None:
    site = case.gpu_site()
    damage(site / PROVIDER)
    res = _check(case)
    assert res.returncode == 1
    ort = res.data["ort"]
    assert ort["is_gpu_build"] is True  # the file is there: a GPU build whose provider cannot be read
    assert ort["cuda_provider"] is None
    assert any("libonnxruntime_providers_cuda.so" in p for p in ort["problems"]), ort["problems"]
    damaged = res.finding("ort-install-damaged")
    assert "libonnxruntime_providers_cuda.so" in damaged["detail"]


def test_provider_library_for_another_architecture(case: Case) -> None:
    site = case.gpu_site()
    _set_machine(site / PROVIDER, EM_AARCH64)
    res = _check(case)
    assert res.returncode == 1
    assert res.data["ort"]["cuda_provider"]["machine"] == "aarch64"
    assert any(f["severity"] == "error" for f in res.data["findings"])


# --------------------------------------------------------------------------------------------------
# A CUDA library in the NVIDIA wheel directory, through `preload`, which really loads
# --------------------------------------------------------------------------------------------------
def _preload(case: Case) -> Result:
    return case.run("preload", "--json", "--directory", "")


def _keep_headers(p: Path) -> None:
    """Cut a library after its first page: the ELF headers are intact, the code is gone (an interrupted
    download). Mapping it succeeds and the first touch past the end is SIGBUS."""
    data = p.read_bytes()
    p.write_bytes(data[:4096])


@pytest.mark.parametrize("damage", [_truncate, _empty, _not_elf, _keep_headers],
                         ids=["truncated", "zero-byte", "not-elf", "headers-only"])
def test_cuda_library_that_does_not_match_its_record_is_never_loaded(
        case: Case, damage: Callable[[Path], None]) -> None:
    site = case.gpu_site()
    target = site / CU13_LIB / "libcurand.so.10"
    damage(target)
    res = _preload(case)
    assert res.returncode == 1  # never 135 (SIGBUS)
    failed = {f["name"]: f for f in res.data["failed"]}
    assert "curand" in failed
    assert "libcurand.so.10" in failed["curand"]["error"]
    f = next(f for f in res.data["findings"] if f["id"] == "lib-file-damaged")
    assert str(target) in f["detail"]
    assert "--force-reinstall --no-deps" in f["fix"]
    assert "==" in f["fix"]  # the reinstall is pinned to the installed version
    assert {x["name"] for x in res.data["loaded"]} >= {"cudart", "cublas", "cublasLt"}
    check = case.run("check", "--json", "--no-smoke")
    assert str(target) in check.finding("lib-file-damaged")["detail"]
    script = case.base / "hook.py"
    script.write_text("import ortdoctor.hook\nprint('the program goes on')\n")
    hook = helpers.run_cli([], sites=[case.site], cwd=case.cwd, env={"ORTDOCTOR_CACHE": "0"},
                           argv0=[sys.executable, str(script)])
    assert hook.returncode == 0, hook.text
    assert "the program goes on" in hook.stdout
    assert "lib-file-damaged" in hook.stderr


def test_cuda_library_that_matches_its_record_but_does_not_load(case: Case) -> None:
    """The same size as RECORD says, but not loadable (another file of that size): a clean dlopen error."""
    site = case.gpu_site()
    target = site / CU13_LIB / "libcurand.so.10"
    target.write_bytes(b"\0" * target.stat().st_size)
    res = _preload(case)
    assert res.returncode == 1
    assert "lib-load-failed" in [f["id"] for f in res.data["findings"]]


def test_cuda_library_for_another_architecture(case: Case) -> None:
    site = case.gpu_site()
    _set_machine(site / CU13_LIB / "libcurand.so.10", EM_AARCH64)
    res = _preload(case)
    assert res.returncode == 1
    failed = {f["name"]: f for f in res.data["failed"]}
    assert "curand" in failed
    assert "lib-load-failed" in [f["id"] for f in res.data["findings"]]


def _replace_with_dir(p: Path) -> None:
    p.unlink()
    p.mkdir()
    (p / "libcurand.so.10").write_bytes(b"inside a directory named like the library\n")


def _symlink_loop(p: Path) -> None:
    p.unlink()
    p.symlink_to(p.name)  # libcurand.so.10 -> libcurand.so.10


def _symlink_pair_loop(p: Path) -> None:
    p.unlink()
    p.symlink_to(p.name + ".loop")
    (p.parent / (p.name + ".loop")).symlink_to(p.name)


def _dangling(p: Path) -> None:
    p.unlink()
    p.symlink_to("libcurand.so.10.4.0.35-removed")


def _fifo(p: Path) -> None:
    p.unlink()
    os.mkfifo(p)


def _socket(p: Path) -> None:
    p.unlink()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(p))
    s.close()


@pytest.mark.parametrize("damage", [_replace_with_dir, _symlink_loop, _symlink_pair_loop, _dangling, _fifo, _socket],
                         ids=["directory", "symlink-loop", "symlink-pair-loop", "dangling-symlink", "fifo", "socket"])
def test_cuda_library_that_is_not_a_file(case: Case, damage: Callable[[Path], None]) -> None:
    """Not a regular file: never a candidate, reported as not found, and nothing blocks on it."""
    site = case.gpu_site()
    damage(site / CU13_LIB / "libcurand.so.10")
    res = _check(case, timeout=60)
    assert res.returncode == 1
    curand = _lib(res, "curand")
    assert curand["path"] is None or "/nvidia/cu13/lib/" not in curand["path"], curand
    ids = res.finding_ids()
    assert "cuda-lib-missing" in ids, ids
    pre = _preload(case)
    assert pre.returncode == 1
    assert "curand" in {f["name"] for f in pre.data["failed"]}
    assert {x["name"] for x in pre.data["loaded"]} >= {"cudart", "cublas", "cublasLt"}


def test_library_directory_is_a_file(case: Case) -> None:
    site = case.gpu_site()
    lib_dir = site / CU13_LIB
    for child in lib_dir.iterdir():
        child.unlink()
    lib_dir.rmdir()
    lib_dir.write_bytes(b"\x7fELF not a directory")
    res = _check(case)
    assert res.returncode == 1
    assert "cuda-lib-missing" in res.finding_ids()

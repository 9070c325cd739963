"""The attacks the gate (``ortdoctor/native/gate.py``) closes, each as another local user would mount it.

Planted libraries are gcc-built; their constructor appends a line to a marker file, so a load is proven
by the marker and its absence proves nothing of the file ran. "Another user" is uid 12345 (files handed
over with ``chown``, processes started with ``setpriv`` where it exists); cases that need root skip
cleanly without it.

* TensorRT (``ORTDOCTOR_TENSORRT=1``, ``preload --tensorrt``) from a world-writable, foreign-owned
  ``LD_LIBRARY_PATH`` directory, and from the current directory named by an absolute entry;
* NVML planted in such a directory, for ``check --no-smoke`` and ``explain "<text>"``;
* a root-owned ``CUDA_HOME`` under a world-writable, non-sticky parent, with and without another user
  swapping the directory (``renameat2(RENAME_EXCHANGE)``) while the hook runs;
* a truncated library outside any wheel (the hook and ``preload`` survive, and report it);
* a FIFO named like a library in a refused directory, and in the current directory behind an empty
  ``LD_LIBRARY_PATH`` entry (the hook returns);
* ``--allow-unsafe-dirs`` names what it let through.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.faults import helpers
from tests.faults.conftest import Case
from tests.support.sharedlibs import build_so

ATTACKER = 12345
TENSORRT = ("libnvinfer.so.10", "libnvinfer_plugin.so.10", "libnvonnxparser.so.10")
PLANTED = """#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen("%s", "a");
    if (f) { fputs("planted %s ran\\n", f); fclose(f); }
}
int cudaRuntimeGetVersion(int *v) { *v = 13000; return 0; }
int getInferLibVersion(void) { return 101601; }
int getNvOnnxParserVersion(void) { return 101601; }
"""
HOOK = ("import json, ortdoctor.hook as h\n"
        "r = h.result\n"
        "print(json.dumps({'loaded': [x.path for x in r.loaded] if r else [],\n"
        "                  'findings': [[f.id, f.title, f.detail] for f in r.findings] if r else []}))\n")


def _root() -> None:
    if os.getuid() != 0:
        pytest.skip("needs root, to hand files to another uid")


def _plant(directory: Path, soname: str, marker: Path) -> Path:
    return build_so(directory, soname, source=PLANTED % (marker, soname))


def _hook(case: Case, env: dict[str, str | None], *, python_args: tuple[str, ...] = (),
          timeout: float = helpers.TIMEOUT) -> dict[str, Any]:
    res = helpers.run_cli([], sites=[case.site], cwd=case.cwd, env=env, timeout=timeout,
                          argv0=[sys.executable, *python_args, "-c", HOOK])
    assert res.returncode == 0, res.text
    data: dict[str, Any] = json.loads(res.stdout)
    data["stderr"] = res.stderr
    return data


def _ids(data: dict[str, Any]) -> list[str]:
    return [f[0] if isinstance(f, list) else f["id"] for f in data.get("findings", [])]


def _details(data: dict[str, Any], fid: str) -> str:
    return "\n".join(f[2] if isinstance(f, list) else f["detail"] for f in data.get("findings", [])
                     if (f[0] if isinstance(f, list) else f["id"]) == fid)


def _site_without_wheels(case: Case) -> Path:
    """The onnxruntime-gpu site with no NVIDIA wheels: the libraries must come from elsewhere."""
    site = case.gpu_site()
    shutil.rmtree(site / "nvidia")
    for d in site.glob("nvidia_*"):
        shutil.rmtree(d)
    return site


# --------------------------------------------------------------------------------------------------
# TensorRT
# --------------------------------------------------------------------------------------------------
def _tensorrt_site(case: Case, build: Path) -> None:
    """The healthy site plus a TensorRT provider that links TensorRT 10 (as the onnxruntime-gpu wheel's does)."""
    site = case.gpu_site()
    libs = {so: build_so(build, so) for so in TENSORRT}
    capi = site / "onnxruntime" / "capi"
    provider = build_so(capi, "libonnxruntime_providers_tensorrt.so",
                        needed=(libs["libnvinfer.so.10"], libs["libnvonnxparser.so.10"]))
    (record,) = site.glob("onnxruntime_gpu-*.dist-info/RECORD")
    with record.open("a") as f:
        f.write(f"onnxruntime/capi/{provider.name},,{provider.stat().st_size}\n")


def test_tensorrt_from_a_world_writable_foreign_ld_library_path_directory(case: Case, tmp_path: Path) -> None:
    _root()
    _tensorrt_site(case, tmp_path / "build")
    marker = tmp_path / "MARKER"
    ww = case.base / "ww"
    for so in TENSORRT:
        _plant(ww, so, marker)
    for p in [ww, *ww.iterdir()]:
        os.chown(p, ATTACKER, ATTACKER)
    os.chmod(ww, 0o777)
    env: dict[str, str | None] = {"LD_LIBRARY_PATH": str(ww), "ORTDOCTOR_TENSORRT": "1"}
    data = _hook(case, env)
    assert not marker.exists(), marker.read_text()
    assert not any("nvinfer" in p for p in data["loaded"]), data["loaded"]
    assert "unsafe-library-dir" in _ids(data), data
    assert str(ww) in _details(data, "unsafe-library-dir")

    res = helpers.run_cli(["preload", "--tensorrt", "--json"], sites=[case.site], cwd=case.cwd,
                          env={"LD_LIBRARY_PATH": str(ww)})
    assert not marker.exists(), marker.read_text()
    out = res.data
    assert not any("nvinfer" in x["path"] for x in out["loaded"]), out["loaded"]
    assert "unsafe-library-dir" in _ids(out)
    trt = [f for f in out["findings"] if f["id"] == "tensorrt-unavailable"]
    assert trt, out["findings"]
    assert str(ww) in trt[0]["detail"]

    # control: with the override the planted TensorRT loads (the test can see a load), and it is named
    res = helpers.run_cli(["preload", "--tensorrt", "--json", "--allow-unsafe-dirs"], sites=[case.site],
                          cwd=case.cwd, env={"LD_LIBRARY_PATH": str(ww)})
    assert marker.exists()
    assert "unsafe-dir-allowed" in _ids(res.data), res.data["findings"]


def test_tensorrt_in_the_current_directory_named_by_an_absolute_entry(case: Case, tmp_path: Path) -> None:
    _tensorrt_site(case, tmp_path / "build")
    marker = tmp_path / "MARKER"
    for so in TENSORRT:
        _plant(case.cwd, so, marker)
    env: dict[str, str | None] = {"LD_LIBRARY_PATH": str(case.cwd), "ORTDOCTOR_TENSORRT": "1"}
    data = _hook(case, env)
    assert not marker.exists(), marker.read_text()
    assert not any("nvinfer" in p for p in data["loaded"]), data["loaded"]
    res = helpers.run_cli(["preload", "--tensorrt", "--json"], sites=[case.site], cwd=case.cwd,
                          env={"LD_LIBRARY_PATH": str(case.cwd)})
    assert not marker.exists(), marker.read_text()
    assert not any("nvinfer" in x["path"] for x in res.data["loaded"])
    assert "current directory" in " ".join(f["error"] for f in res.data["failed"]), res.data["failed"]


# --------------------------------------------------------------------------------------------------
# NVML in ortdoctor's own process
# --------------------------------------------------------------------------------------------------
def test_nvml_planted_in_a_world_writable_ld_library_path_directory(case: Case, tmp_path: Path) -> None:
    _root()
    case.gpu_site()
    marker = tmp_path / "MARKER"
    ww = case.base / "ww"
    _plant(ww, "libnvidia-ml.so.1", marker)
    for p in [ww, *ww.iterdir()]:
        os.chown(p, ATTACKER, ATTACKER)
    os.chmod(ww, 0o777)
    env: dict[str, str | None] = {"LD_LIBRARY_PATH": str(ww)}
    res = helpers.run_cli(["check", "--no-smoke", "--json"], sites=[case.site], cwd=case.cwd, env=env)
    assert not marker.exists(), marker.read_text()
    assert res.data["driver"]["available"] is False
    assert str(ww) in (res.data["driver"]["error"] or ""), res.data["driver"]
    helpers.run_cli(["explain", "libcudnn.so.9: cannot open shared object file"], sites=[case.site],
                    cwd=case.cwd, env=env)
    assert not marker.exists(), marker.read_text()


# --------------------------------------------------------------------------------------------------
# The path between the check and the map: ancestors
# --------------------------------------------------------------------------------------------------
FLIPPER = """import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = (p.encode() for p in sys.argv[1:3])
n = int(sys.argv[3])
for _ in range(n):  # bounded: renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE), x86_64
    if libc.syscall(316, -100, a, -100, b, 2) != 0:
        break
"""


def _cuda_home_under_a_world_writable_parent(case: Case, built_libs: dict[str, Path],
                                             marker: Path) -> tuple[Path, Path, Path]:
    _site_without_wheels(case)
    shared = case.base / "shared"
    lib64 = shared / "cuda" / "lib64"
    lib64.mkdir(parents=True)
    for key, path in built_libs.items():
        if key.startswith("lib"):
            shutil.copy(path, lib64 / key)
    evil = shared / "evil" / "lib64"
    shutil.copytree(lib64, evil)
    (evil / "libcudart.so.13").unlink()
    _plant(evil, "libcudart.so.13", marker)
    for dirpath, _dirs, files in os.walk(shared / "evil"):
        os.chown(dirpath, ATTACKER, ATTACKER)
        for f in files:
            os.chown(os.path.join(dirpath, f), ATTACKER, ATTACKER)
    os.chmod(shared, 0o777)  # world-writable, not sticky: whoever can write it can rename what it holds
    return shared, shared / "cuda", shared / "evil"


def test_cuda_home_under_a_world_writable_parent_is_refused(case: Case, built_libs: dict[str, Path],
                                                           tmp_path: Path) -> None:
    _root()
    marker = tmp_path / "MARKER"
    shared, cuda, _evil = _cuda_home_under_a_world_writable_parent(case, built_libs, marker)
    data = _hook(case, {"CUDA_HOME": str(cuda)})
    assert not marker.exists()
    assert not any(p.startswith(str(shared)) for p in data["loaded"]), data["loaded"]
    assert "unsafe-library-dir" in _ids(data), data
    assert str(shared) in _details(data, "unsafe-library-dir")
    res = helpers.run_cli(["preload", "--json"], sites=[case.site], cwd=case.cwd, env={"CUDA_HOME": str(cuda)})
    assert not marker.exists()
    unsafe = [f for f in res.data["findings"] if f["id"] == "unsafe-library-dir"]
    assert unsafe, res.data["findings"]
    # the parent is what to fix, and the command names it quoted, on a line of its own
    assert unsafe[0]["fix"].splitlines()[0] == shlex.join(["chmod", "o-w", str(shared)])


def test_cuda_home_swapped_by_another_user_while_the_hook_runs(case: Case, built_libs: dict[str, Path],
                                                              tmp_path: Path) -> None:
    _root()
    python = shutil.which("python3", path="/usr/bin:/usr/local/bin")
    if platform.machine() != "x86_64" or shutil.which("setpriv") is None or python is None:
        pytest.skip("needs x86_64 (the renameat2 syscall number), setpriv and a system python3")
    marker = tmp_path / "MARKER"
    _shared, cuda, evil = _cuda_home_under_a_world_writable_parent(case, built_libs, marker)
    flipper = case.base / "flip.py"
    flipper.write_text(FLIPPER)
    for _ in range(3):
        swap = subprocess.Popen(["setpriv", f"--reuid={ATTACKER}", f"--regid={ATTACKER}", "--clear-groups",
                                 python, str(flipper), str(cuda), str(evil), "2000000"])
        try:
            _hook(case, {"CUDA_HOME": str(cuda)})
        finally:
            swap.kill()
            swap.wait()
        assert not marker.exists(), marker.read_text()


# --------------------------------------------------------------------------------------------------
# A truncated library outside any wheel
# --------------------------------------------------------------------------------------------------
def test_truncated_library_outside_any_wheel(case: Case, built_libs: dict[str, Path]) -> None:
    _site_without_wheels(case)
    lib64 = case.base / "cuda" / "lib64"
    lib64.mkdir(parents=True)
    for key, path in built_libs.items():
        if key.startswith("lib"):
            shutil.copy(path, lib64 / key)
    os.truncate(lib64 / "libcudart.so.13", 8192)
    env: dict[str, str | None] = {"CUDA_HOME": str(case.base / "cuda")}
    data = _hook(case, env)  # returncode 0: no SIGBUS
    assert str(lib64 / "libcudart.so.13") not in data["loaded"]
    assert "lib-file-damaged" in _ids(data), data
    assert "truncated" in _details(data, "lib-file-damaged")
    res = helpers.run_cli(["preload", "--json"], sites=[case.site], cwd=case.cwd, env=env)
    assert res.returncode in (0, 1), res.text
    damaged = [f for f in res.data["findings"] if f["id"] == "lib-file-damaged"]
    assert damaged, res.data["findings"]
    assert str(lib64 / "libcudart.so.13") in damaged[0]["detail"]


# --------------------------------------------------------------------------------------------------
# A FIFO named like a library
# --------------------------------------------------------------------------------------------------
def test_fifo_in_a_world_writable_ld_library_path_directory(case: Case) -> None:
    case.gpu_site()
    ww = case.base / "ww"
    ww.mkdir()
    os.chmod(ww, 0o777)
    os.mkfifo(ww / "libcublasLt.so.13")
    data = _hook(case, {"LD_LIBRARY_PATH": str(ww)}, timeout=60)
    assert any(p.endswith("libcublasLt.so.13") for p in data["loaded"]), data


def test_fifo_in_the_current_directory_behind_an_empty_entry(case: Case) -> None:
    case.gpu_site()
    os.mkfifo(case.cwd / "libcublasLt.so.13")
    data = _hook(case, {"LD_LIBRARY_PATH": ":/usr/lib"}, timeout=60)
    assert any(p.endswith("libcublasLt.so.13") for p in data["loaded"]), data
    assert "ld-library-path-unsafe-entry" in _ids(data)


# --------------------------------------------------------------------------------------------------
# --allow-unsafe-dirs is not silent
# --------------------------------------------------------------------------------------------------
def test_allow_unsafe_dirs_names_what_it_let_through(case: Case, tmp_path: Path) -> None:
    site = case.gpu_site()
    (site / helpers.CU13_LIB / "libcudart.so.13").unlink()
    marker = tmp_path / "MARKER"
    ww = case.base / "ww"
    planted = _plant(ww, "libcudart.so.13", marker)
    os.chmod(ww, 0o777)
    res = helpers.run_cli(["preload", "--json", "--directory", str(ww), "--allow-unsafe-dirs"],
                          sites=[case.site], cwd=case.cwd)
    assert marker.exists(), "with the override the planted library loads: the detector works"
    allowed = [f for f in res.data["findings"] if f["id"] == "unsafe-dir-allowed"]
    assert allowed, res.data["findings"]
    assert str(planted) in allowed[0]["detail"]
    assert "world-writable" in allowed[0]["detail"]
    assert allowed[0]["severity"] == "warning"


def test_allow_unsafe_dir_lifts_the_rule_only_under_its_directory(case: Case, tmp_path: Path) -> None:
    """`--allow-unsafe-dir DIR` (and ORTDOCTOR_ALLOW_UNSAFE_DIR for the hook) lets through what is under
    DIR only; a library in another unsafe directory is still refused, and what it let through is named."""
    site = case.gpu_site()
    (site / helpers.CU13_LIB / "libcudart.so.13").unlink()
    marker = tmp_path / "MARKER"
    ww = case.base / "ww"
    planted = _plant(ww, "libcudart.so.13", marker)
    os.chmod(ww, 0o777)
    elsewhere = case.base / "elsewhere"
    elsewhere.mkdir()
    os.chmod(elsewhere, 0o777)

    res = helpers.run_cli(["preload", "--json", "--directory", str(ww), "--allow-unsafe-dir", str(elsewhere)],
                          sites=[case.site], cwd=case.cwd)
    assert not marker.exists(), "an override scoped to another directory let the planted library run"
    assert "unsafe-library-dir" in _ids(res.data), res.data["findings"]
    assert "unsafe-dir-allowed" not in _ids(res.data)
    data = _hook(case, {"ORTDOCTOR_DIRECTORY": str(ww), "ORTDOCTOR_ALLOW_UNSAFE_DIR": str(elsewhere)})
    assert not marker.exists(), "the hook's scoped override let the planted library run"

    res = helpers.run_cli(["preload", "--json", "--directory", str(ww), "--allow-unsafe-dir", str(ww)],
                          sites=[case.site], cwd=case.cwd)
    assert marker.exists(), "with the override on its directory the planted library loads: the detector works"
    allowed = [f for f in res.data["findings"] if f["id"] == "unsafe-dir-allowed"]
    assert allowed, res.data["findings"]
    assert str(planted) in allowed[0]["detail"]
    assert f"--allow-unsafe-dir {ww}" in allowed[0]["detail"]
    marker.unlink()
    data = _hook(case, {"ORTDOCTOR_DIRECTORY": str(ww), "ORTDOCTOR_ALLOW_UNSAFE_DIR": f"relative:{ww}"})
    assert marker.exists()
    assert "unsafe-dir-allowed" in _ids(data), data

"""The fast paths of `check`: the smoke child started early, the pybind hash skipped when unambiguous,
NVML's "library not found" answered without pynvml, the matrix read without PyYAML.

No timing is asserted: each test checks the path taken (what ran before what, what was computed,
what was imported), never how long it took.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ortdoctor.decide.matrix.model import MatrixError
from ortdoctor.doctor.check import run_check
from ortdoctor.formats import distinfo as distributions
from ortdoctor.probes.driver import nvml_library_may_exist
from ortdoctor.probes.ort import probe_ort
from ortdoctor.prove.smoke.child import RESULT_PREFIX
from ortdoctor.prove.smoke.runner import SmokeRequest, start_smoke
from tests.support.fake_site import install_dist
from tests.support.sharedlibs import build_so

ROOT = Path(__file__).resolve().parents[1]
PYBIND = "onnxruntime/capi/onnxruntime_pybind11_state.cpython-311-x86_64-linux-gnu.so"


def _marker_child(marker: Path, *, then: str = "") -> tuple[str, ...]:
    """A smoke child that writes its pid to ``marker`` first, then runs ``then`` (and reports ok)."""
    result = json.dumps({"ran": True, "ok": True, "stage": "done", "providers": ["CUDAExecutionProvider"]})
    code = (f"import os, time; open({str(marker)!r}, 'w').write(str(os.getpid())); {then}\n"
            f"print({RESULT_PREFIX!r} + {result!r}, flush=True)")
    return (sys.executable, "-c", code)


def _wait_for(path: Path, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return True
        time.sleep(0.02)
    return False


class _NvmlThatLooks:
    """NVML at its API edge: no driver. Its init records whether the smoke child already runs."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker
        self.child_seen_at_driver_probe: bool | None = None

    def nvmlInit(self) -> None:
        self.child_seen_at_driver_probe = _wait_for(self.marker)
        raise _NvmlError(12)


class _NoDriver:
    def nvmlInit(self) -> None:
        raise _NvmlError(12)


class _NvmlError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


def _gpu_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    cudart = build_so(tmp_path / "deps", "libcudart.so.13")
    provider = build_so(tmp_path / "libs", "libonnxruntime_providers_cuda.so", needed=(cudart,))
    install_dist(site, "onnxruntime-gpu", "1.31.1", {
        "onnxruntime/__init__.py": b"raise SystemExit('never imported')\n",
        "onnxruntime/capi/libonnxruntime_providers_cuda.so": provider,
        "onnxruntime/capi/build_and_package_info.py": b"package_name = 'onnxruntime-gpu'\n"
                                                      b"__version__ = '1.31.1'\ncuda_version = '13.0'\n",
    })
    return site


def test_smoke_child_runs_while_the_environment_is_inspected(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    nvml = _NvmlThatLooks(marker)
    site = _gpu_site(tmp_path)
    report = run_check(site_dirs=[str(site)], sys_path=[str(site)], nvml=nvml,
                       smoke_request=SmokeRequest(child_argv=_marker_child(marker), timeout=60))
    # The driver probe comes after the onnxruntime probe: the child was already running then.
    assert nvml.child_seen_at_driver_probe is True
    assert report.smoke is not None
    assert report.smoke.ok
    assert {"smoke", "smoke_wait"} <= set(report.timings_ms)


def test_smoke_child_is_killed_when_check_refuses_its_arguments(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    bad = tmp_path / "matrix.yaml"
    bad.write_text("schema: [", encoding="utf-8")
    site = _gpu_site(tmp_path)
    with pytest.raises(MatrixError):
        run_check(site_dirs=[str(site)], sys_path=[str(site)], nvml=_NoDriver(),
                  matrix_path=bad, smoke=True,
                  smoke_request=SmokeRequest(child_argv=_marker_child(marker, then="time.sleep(600)"),
                                             timeout=600))
    # The refusal can come before the child has written its pid (it is killed while Python starts):
    # then it must never get that far. Otherwise the pid it wrote must be dead.
    if not _wait_for(marker, seconds=5.0):
        return
    pid = int(marker.read_text())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    assert not _alive(pid)


def test_child_started_for_a_cpu_build_is_cancelled(tmp_path: Path) -> None:
    """A CPU wheel installed over the GPU one leaves the CUDA provider behind: the child starts on the
    provider library, and is cancelled once the build info says CPU (``auto`` smoke skips CPU builds)."""
    marker = tmp_path / "child.pid"
    site = _gpu_site(tmp_path)
    (site / "onnxruntime/capi/build_and_package_info.py").write_text(
        "package_name = 'onnxruntime'\n__version__ = '1.31.1'\n")
    report = run_check(site_dirs=[str(site)], sys_path=[str(site)], nvml=_NoDriver(),
                       smoke_request=SmokeRequest(child_argv=_marker_child(marker, then="time.sleep(600)"),
                                                  timeout=600))
    assert report.smoke is None
    assert report.smoke_skipped == "no CUDA build of onnxruntime is installed"
    if marker.exists() and marker.read_text():  # it may have been killed before it wrote anything
        assert not _alive(int(marker.read_text()))


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"  # a zombie has exited
    except OSError:
        return False


def test_started_smoke_is_collected_once(tmp_path: Path) -> None:
    run = start_smoke(SmokeRequest(child_argv=_marker_child(tmp_path / "m"), timeout=60))
    first = run.result()
    assert first.ok
    assert run.result() is first


def test_smoke_timeout_counts_from_the_start(tmp_path: Path) -> None:
    run = start_smoke(SmokeRequest(child_argv=(sys.executable, "-c", "import time; time.sleep(600)"), timeout=1))
    time.sleep(1.5)  # the parent's own work outlasts the timeout
    result = run.result()
    assert (result.ok, result.exit_status, result.finding_id) == (False, "timeout", "smoke-failed")


# ---------------------------------------------------------------------------------------------
# The pybind module is hashed only when two distributions share its directory
# ---------------------------------------------------------------------------------------------
def _pybind_lib(tmp_path: Path, name: str, body: str) -> Path:
    return build_so(tmp_path / name, "onnxruntime_pybind11_state.so", source=body)


def test_single_distribution_is_not_hashed(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_dist(site, "onnxruntime", "1.31.1", {
        "onnxruntime/__init__.py": b"", PYBIND: _pybind_lib(tmp_path, "a", "int a(void) { return 1; }\n")})
    distributions._hash_cache.clear()
    info = probe_ort([str(site)])
    assert info.distributions[0].owns_files_on_disk is True
    assert distributions._hash_cache == {}


def test_single_distribution_with_another_size_does_not_own_the_file(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_dist(site, "onnxruntime", "1.31.1", {
        "onnxruntime/__init__.py": b"", PYBIND: _pybind_lib(tmp_path, "a", "int a(void) { return 1; }\n")})
    with open(site / PYBIND, "ab") as f:
        f.write(b"\0" * 4096)  # replaced by another build of another size
    assert probe_ort([str(site)]).distributions[0].owns_files_on_disk is False


def test_two_distributions_in_one_directory_are_told_apart_by_hash(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_dist(site, "onnxruntime-gpu", "1.31.1", {
        "onnxruntime/__init__.py": b"", PYBIND: _pybind_lib(tmp_path, "g", "int g(void) { return 1; }\n")})
    install_dist(site, "onnxruntime", "1.31.1", {
        "onnxruntime/__init__.py": b"", PYBIND: _pybind_lib(tmp_path, "c", "int c(void) { return 2; }\n")})
    distributions._hash_cache.clear()
    info = probe_ort([str(site)])
    assert {d.name: d.owns_files_on_disk for d in info.distributions} == {"onnxruntime-gpu": False,
                                                                          "onnxruntime": True}
    assert len(distributions._hash_cache) == 1  # one file, hashed once for both


# ---------------------------------------------------------------------------------------------
# NVML: "library not found" without importing pynvml, where no libnvidia-ml.so.1 can exist
# ---------------------------------------------------------------------------------------------
def test_nvml_library_places(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert nvml_library_may_exist("linux", {}, [str(empty)], environ={}) is _nvml_mapped_here()
    assert nvml_library_may_exist("linux", {"libnvidia-ml.so.1": ("/x/libnvidia-ml.so.1",)}, [], environ={})
    lib_dir = tmp_path / "lib"
    lib_dir.mkdir()
    (lib_dir / "libnvidia-ml.so.1").write_bytes(b"")
    assert nvml_library_may_exist("linux", {}, [], environ={"LD_LIBRARY_PATH": f"/nonexistent:{lib_dir}"})
    assert nvml_library_may_exist("linux", {}, [str(lib_dir)], environ={})
    assert nvml_library_may_exist("darwin", {}, [], environ={})  # no fast answer: ask pynvml


def _nvml_mapped_here() -> bool:
    with open("/proc/self/maps", "rb") as f:
        return b"libnvidia-ml.so.1" in f.read()


def _no_nvml_on_this_machine() -> bool:
    return not nvml_library_may_exist("linux", None, ("/lib", "/usr/lib", "/lib64", "/usr/lib64"))


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _no_nvml_on_this_machine(),
                    reason="this machine may have an NVML library")
def test_check_imports_neither_pyyaml_nor_pynvml_here() -> None:
    code = ("import sys\nfrom ortdoctor.doctor.check import run_check\nrun_check(smoke=False)\n"
            "print(sorted(m for m in ('yaml', 'pynvml', 'concurrent.futures', 'hashlib') if m in sys.modules))")
    env: dict[str, Any] = {k: v for k, v in os.environ.items() if k not in ("ORTDOCTOR_MATRIX", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                          check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    # not even hashlib: the matrix snapshot is matched by the YAML's size and CRC-32
    assert proc.stdout.split("\n")[-2] == "[]"


def test_pybind_fifo_is_never_read(tmp_path: Path) -> None:
    """Not a regular file: neither owner, and never opened (reading a FIFO would block forever)."""
    site = tmp_path / "site"
    install_dist(site, "onnxruntime-gpu", "1.31.1", {"onnxruntime/__init__.py": b"", PYBIND: b"g" * 64})
    install_dist(site, "onnxruntime", "1.31.1", {"onnxruntime/__init__.py": b"", PYBIND: b"c" * 64})
    (site / PYBIND).unlink()
    os.mkfifo(site / PYBIND)
    info = probe_ort([str(site)])
    assert {d.name: d.owns_files_on_disk for d in info.distributions} == {"onnxruntime-gpu": False,
                                                                          "onnxruntime": False}
    assert distributions.file_sha256(str(site / PYBIND)) is None

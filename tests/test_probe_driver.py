"""probe_driver: NVML faked only at its C API edge (a compiled libnvidia-ml.so.1), run in a child."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from ortdoctor.core.facts import DriverError
from ortdoctor.formats.ldcache import read_ld_cache
from ortdoctor.probes.driver import cuda_version_text, probe_driver
from tests.support import fake_nvml

H200 = "dev=NVIDIA H200,9.0,143771,140000,GPU-uuid-0"


@pytest.fixture(scope="module")
def nvml_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fake_nvml.build(tmp_path_factory.mktemp("fake_nvml")).parent


def _run(nvml_dir: Path, spec: str, log: Path | None = None, **extra: str) -> dict[str, Any]:
    env = fake_nvml.env_for(nvml_dir, spec, log=log)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.pop("NVIDIA_VISIBLE_DEVICES", None)
    env.update(extra)
    return fake_nvml.run_probe_driver(env)


def test_healthy_driver_with_two_devices(nvml_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    got = _run(nvml_dir, f"init=0;driver=580.159.04;cuda=13000;{H200};dev=NVIDIA A10,8.6,24000,1000,GPU-1,3",
               log=log, CUDA_VISIBLE_DEVICES="1", NVIDIA_VISIBLE_DEVICES="all")
    assert got["available"] is True
    assert (got["version"], got["cuda_version"], got["error"], got["error_kind"]) == ("580.159.04", "13.0", None, None)
    assert got["devices"] == [
        {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-uuid-0", "compute_capability": "9.0",
         "memory_total_mib": 143771, "memory_free_mib": 140000, "compute_mode": "default"},
        {"index": 1, "name": "NVIDIA A10", "uuid": "GPU-1", "compute_capability": "8.6",
         "memory_total_mib": 24000, "memory_free_mib": 1000, "compute_mode": "exclusive-process"},
    ]
    assert (got["cuda_visible_devices"], got["nvidia_visible_devices"]) == ("1", "all")
    calls = log.read_text().split()
    assert calls[0] == "nvmlInitWithFlags"
    assert calls[-1] == "nvmlShutdown"


def test_old_driver_and_no_devices(nvml_dir: Path) -> None:
    got = _run(nvml_dir, "init=0;driver=535.54.03;cuda=12020")
    assert got["available"] is True
    assert (got["version"], got["cuda_version"], got["devices"]) == ("535.54.03", "12.2", [])


@pytest.mark.parametrize(
    ("code", "kind"),
    [(9, DriverError.DRIVER_NOT_LOADED), (18, DriverError.LIB_RM_VERSION_MISMATCH),
     (4, DriverError.NO_PERMISSION), (15, DriverError.GPU_IS_LOST), (999, DriverError.OTHER)],
)
def test_init_failures_are_told_apart(nvml_dir: Path, tmp_path: Path, code: int, kind: DriverError) -> None:
    log = tmp_path / "calls.log"
    got = _run(nvml_dir, f"init={code};{H200}", log=log)
    assert got["available"] is False
    assert got["error_kind"] == kind.value
    assert got["error"]
    assert got["devices"] == []
    assert "nvmlShutdown" not in log.read_text().split()  # nothing to shut down after a failed init


def test_device_count_failure_after_init(nvml_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    got = _run(nvml_dir, f"init=0;count_err=15;{H200}", log=log)
    assert got["available"] is True
    assert got["version"] == "580.159.04"
    assert got["error_kind"] == DriverError.GPU_IS_LOST.value
    assert log.read_text().split()[-1] == "nvmlShutdown"


def _has_real_nvml() -> bool:
    try:
        cache = read_ld_cache("/etc/ld.so.cache")
    except (OSError, ValueError):
        cache = {}
    return "libnvidia-ml.so.1" in cache or bool(os.environ.get("LD_LIBRARY_PATH"))


@pytest.mark.skipif(_has_real_nvml(), reason="this machine has an NVML library: 'not found' cannot be shown")
def test_library_not_found_on_this_machine() -> None:
    info = probe_driver(environ={})
    assert info.available is False
    assert info.error_kind is DriverError.LIBRARY_NOT_FOUND
    assert info.error is not None
    assert "libnvidia-ml.so.1" in info.error


def test_files_under_a_fake_root(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    for node in ("nvidia0", "nvidiactl", "nvidia-uvm", "dxg"):
        (tmp_path / "dev" / node).write_text("")
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)
    (tmp_path / "proc/driver/nvidia/version").write_text(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U16)\n"
        "GCC version:  gcc version 12.2.0\n")
    wsl = tmp_path / "usr/lib/wsl/lib"
    wsl.mkdir(parents=True)
    (wsl / "libcuda.so.1").write_text("")
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "libcuda.so.1").write_text("")

    class NoNvml:
        def nvmlInit(self) -> None:
            raise RuntimeError("boom")

    info = probe_driver(NoNvml(), {"LD_LIBRARY_PATH": f"{extra}:relative"}, ld_cache={}, fs_root=str(tmp_path),
                        default_dirs=(), os_name="linux")
    assert info.error_kind is DriverError.OTHER
    assert info.libcuda == (str(extra / "libcuda.so.1"), str(wsl / "libcuda.so.1"))
    assert [os.path.basename(n) for n in info.dev_nodes] == ["nvidia-uvm", "nvidia0", "nvidiactl", "dxg"]
    assert info.kernel_module_version == "580.159.04"


class _Err(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value


class _ModuleLike:
    """A module-like NVML for the pure mapping logic; the compiled fake covers pynvml itself."""

    def __init__(self, fail_name: bool = False) -> None:
        self.fail_name = fail_name
        self.shutdown = 0

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None:
        self.shutdown += 1
    def nvmlSystemGetDriverVersion(self) -> bytes:
        return b"580.159.04"
    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        raise _Err(13)
    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return 12080
    def nvmlDeviceGetCount(self) -> int:
        return 1
    def nvmlDeviceGetHandleByIndex(self, i: int) -> object:
        return object()
    def nvmlDeviceGetName(self, h: object) -> str:
        if self.fail_name:
            raise _Err(3)
        return "GPU"
    def nvmlDeviceGetComputeMode(self, h: object) -> int:
        return 2


def test_mapping_with_a_module_like_object() -> None:
    nvml = _ModuleLike(fail_name=True)
    info = probe_driver(nvml, {}, ld_cache={}, default_dirs=(), os_name="linux")
    assert info.available
    assert info.cuda_version == "12.8"  # fell back to the v1 query
    (dev,) = info.devices
    assert (dev.name, dev.compute_mode, dev.uuid, dev.memory_total_mib) == ("GPU 0", "prohibited", None, None)
    assert nvml.shutdown == 1


def test_cuda_version_text() -> None:
    assert cuda_version_text(13000) == "13.0"
    assert cuda_version_text(12080) == "12.8"
    assert cuda_version_text(11040) == "11.4"

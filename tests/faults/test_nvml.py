"""NVML answering with each of its error classes (the fake libnvidia-ml.so.1 answers at the C API edge)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.conftest import Case

# init=<NVML return code> -> (finding id, words the driver error must contain)
NVML_ERRORS = {
    "9-driver-not-loaded": ("9", "driver-missing", "driver not loaded"),
    "18-lib-rm-mismatch": ("18", "driver-library-mismatch", "mismatch"),
    "3-not-supported": ("3", "driver-error", "Not Supported"),
    "4-no-permission": ("4", "driver-error", "permission"),
    "15-gpu-is-lost": ("15", "driver-error", "lost"),
    "999-unknown": ("999", "driver-error", "999"),
}


@pytest.mark.parametrize("name", list(NVML_ERRORS))
def test_nvml_init_error(case: Case, nvml_dir: Path, name: str) -> None:
    code, fid, words = NVML_ERRORS[name]
    case.gpu_site()
    res = case.run("check", "--json", "--no-smoke", env={"LD_LIBRARY_PATH": str(nvml_dir), "FAKE_NVML": f"init={code}"},
                   watch=[nvml_dir])
    assert res.returncode == 1
    driver = res.data["driver"]
    assert driver["available"] is False
    assert words.lower() in driver["error"].lower(), driver["error"]
    f = res.finding(fid)
    assert f["severity"] == "error"
    assert f["fix"]
    human = case.run("check", "--no-smoke", env={"LD_LIBRARY_PATH": str(nvml_dir), "FAKE_NVML": f"init={code}"})
    assert human.returncode == 1
    assert fid in human.stdout or f["title"] in human.stdout


def test_nvml_library_not_found(case: Case) -> None:
    """Error 12 (library not found) is simply no libnvidia-ml.so.1 anywhere: no driver installed."""
    case.gpu_site()
    res = case.run("check", "--json", "--no-smoke")
    assert res.returncode == 1
    assert "not found" in res.data["driver"]["error"]
    assert res.finding("driver-missing")["fix"]


def test_nvml_device_count_fails(case: Case, nvml_dir: Path) -> None:
    case.gpu_site()
    res = case.run("check", "--json", "--no-smoke",
                   env={"LD_LIBRARY_PATH": str(nvml_dir), "FAKE_NVML": "init=0;count_err=999"})
    assert res.returncode == 1
    assert res.finding("no-gpu-visible")["severity"] == "error"


def test_nvml_healthy_gpu_has_no_driver_finding(case: Case, nvml_dir: Path) -> None:
    """The control case: the same fake, answering success, yields no driver finding."""
    case.gpu_site()
    res = case.run("check", "--json", "--no-smoke", env={
        "LD_LIBRARY_PATH": str(nvml_dir), "FAKE_NVML": "init=0;driver=580.159.04;cuda=13000;"
                                                      "dev=NVIDIA H200,9.0,143771,140000,GPU-0"})
    assert not [i for i in res.finding_ids() if i.startswith(("driver", "no-gpu"))], res.finding_ids()
    assert res.data["driver"]["available"] is True

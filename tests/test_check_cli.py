"""`ortdoctor check` end to end: a real subprocess against the real onnxruntime and NVIDIA wheels.

Each scenario composes real ``pip install --target`` environments on PYTHONPATH, as people do with
layered installs. This machine has no NVIDIA driver; the GPU situations it cannot have use the fake
NVML library (tests/support/fake_nvml.py), which answers at NVML's C API edge only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import fake_nvml, testenvs
from tests.support.report_schema import validate

ROOT = Path(__file__).resolve().parents[1]


def run_check(*envs: str, args: tuple[str, ...] = ("--json", "--no-smoke"), extra_env: dict[str, str] | None = None,
              extra_path: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    paths = [str(ROOT), *extra_path, *(str(testenvs.ensure(e)) for e in envs)]
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra_env or {})
    return subprocess.run([sys.executable, "-m", "ortdoctor", "check", *args], env=env, capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


def report_of(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stdout
    data: dict[str, Any] = validate(json.loads(proc.stdout))
    return data


def finding(report: dict[str, Any], fid: str) -> dict[str, Any]:
    hits: list[dict[str, Any]] = [f for f in report["findings"] if f["id"] == fid]
    assert hits, (fid, [f["id"] for f in report["findings"]])
    return hits[0]


def errors(report: dict[str, Any]) -> list[str]:
    return [f["id"] for f in report["findings"] if f["severity"] == "error"]


@pytest.mark.realwheels
def test_cpu_onnxruntime_only() -> None:
    proc = run_check("ort-cpu")
    rep = report_of(proc)
    f = finding(rep, "ort-cpu-only")
    assert "onnxruntime-gpu" in f["fix"]
    assert rep["verdict"] == "fail"
    assert proc.returncode == 1
    assert rep["ort"]["active"] == "onnxruntime"
    assert rep["libraries"] == []


@pytest.mark.realwheels
def test_both_packages_installed() -> None:
    rep = report_of(run_check("ort-both"))
    f = finding(rep, "ort-multiple-packages")
    assert "onnxruntime-gpu" in f["detail"]
    assert "onnxruntime 1.31.1" in f["detail"]
    assert "pip uninstall -y" in f["fix"]
    assert {d["name"] for d in rep["ort"]["distributions"]} >= {"onnxruntime", "onnxruntime-gpu"}


@pytest.mark.realwheels
def test_cuda_13_build_with_only_the_cuda_12_runtime_wheel() -> None:
    rep = report_of(run_check("ort-gpu", "nvidia-cu12-runtime"))
    f = finding(rep, "cuda-major-mismatch")
    assert "libcudart.so.13" in f["detail"]
    assert "nvidia-cuda-runtime-cu12" in f["detail"]
    # one command brings the whole CUDA 13 set, with the inspected interpreter's pip
    assert f"{sys.executable} -m pip install 'onnxruntime-gpu[cuda,cudnn]==1.31.1'" in f["fix"]
    assert rep["verdict"] == "fail"


@pytest.mark.realwheels
def test_full_cuda_13_wheels_on_a_machine_without_a_driver() -> None:
    proc = run_check("ort-gpu", "nvidia-cu13")
    rep = report_of(proc)
    required = [lib for lib in rep["libraries"] if lib["required"]]
    assert required, rep["libraries"]
    for lib in required:
        assert lib["path"] is not None, lib
        assert "/nvidia/cu13/lib/" in lib["path"] or "/nvidia/cudnn/lib/" in lib["path"], lib
    cudnn = next(lib for lib in rep["libraries"] if lib["name"] == "cudnn")
    assert "/nvidia/cudnn/lib/" in cudnn["path"]
    assert errors(rep) == ["driver-missing"]
    assert rep["verdict"] == "fail"
    assert proc.returncode == 1
    assert rep["ort"]["cuda_version"] == "13.0"
    assert rep["driver"]["available"] is False


def test_no_onnxruntime_at_all() -> None:
    proc = run_check()
    rep = report_of(proc)
    f = finding(rep, "ort-not-installed")
    assert "onnxruntime-gpu" in f["fix"]
    assert rep["ort"]["installed"] is False
    assert rep["ort"]["recommended_install"]
    assert rep["smoke"]["ran"] is False


def test_no_onnxruntime_human_report_says_what_to_install() -> None:
    proc = run_check(args=("--no-smoke",))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "not installed" in proc.stdout
    assert f"for this machine: {sys.executable} -m pip install" in proc.stdout
    assert "\033[" not in proc.stdout  # not a terminal: no colour


def test_contract_shape() -> None:
    rep = report_of(run_check())
    for key in ("schema_version", "ortdoctor_version", "verdict", "findings", "python", "ort", "torch", "driver",
                "libraries", "smoke"):
        assert key in rep
    assert rep["schema_version"] == 2
    for f in rep["findings"]:
        assert set(f) >= {"id", "severity", "title", "detail", "fix"}
    assert set(rep["python"]) >= {"version", "executable", "platform", "libc"}
    assert set(rep["driver"]) >= {"available", "version", "cuda_version", "error", "devices"}
    assert set(rep["smoke"]) >= {"ran", "ok", "providers", "device_id", "error", "timings_ms"}


# ------------------------------------------------------------------------------------------------
# Exit codes and bad input
# ------------------------------------------------------------------------------------------------
def test_bad_matrix_file_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "matrix.yaml"
    bad.write_text("schema: 1\nreleases: [\n")
    proc = run_check(args=("--json", "--no-smoke", "--matrix", str(bad)))
    assert proc.returncode == 2
    assert str(bad) in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_missing_matrix_file_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_check(args=("--no-smoke", "--matrix", str(tmp_path / "nope.yaml")))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_bad_provider_option_is_a_usage_error() -> None:
    proc = run_check(args=("--no-smoke", "--provider-option", "novalue"))
    assert proc.returncode == 2
    assert "KEY=VALUE" in proc.stderr


@pytest.mark.realwheels
def test_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_check("ort-gpu", args=("--no-smoke", "--directory", str(tmp_path / "missing")))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "--directory" in proc.stderr


@pytest.mark.realwheels
def test_ld_library_path_with_an_empty_entry_is_reported() -> None:
    # LD_LIBRARY_PATH ending in ':' means "the current directory": a warning, never an error.
    healthy_but_odd = {"LD_LIBRARY_PATH": "/nonexistent-dir:"}
    rep = report_of(run_check("ort-gpu", "nvidia-cu13", extra_env=healthy_but_odd))
    assert "ld-library-path-unsafe" in [f["id"] for f in rep["findings"]]


# ------------------------------------------------------------------------------------------------
# GPU situations through the fake NVML (this machine has no driver)
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fake_nvml_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fake-nvml")
    fake_nvml.build(out)
    return out


def _nvml_env(lib_dir: Path, spec: str) -> dict[str, str]:
    return {"LD_LIBRARY_PATH": str(lib_dir), "FAKE_NVML": spec}


H200 = "dev=NVIDIA H200,9.0,143771,140000,GPU-uuid-0,0"


@pytest.mark.realwheels
def test_fake_driver_healthy_gpu(fake_nvml_dir: Path) -> None:
    proc = run_check("ort-gpu", "nvidia-cu13", extra_env=_nvml_env(fake_nvml_dir, f"driver=580.159.04;cuda=13000;{H200}"))
    rep = report_of(proc)
    assert rep["driver"]["available"] is True
    assert rep["driver"]["devices"][0]["name"] == "NVIDIA H200"
    assert errors(rep) == []
    # the wheels are not on the loader path: a warning that says how to preload
    assert "cuda-lib-not-loadable" in [f["id"] for f in rep["findings"]]
    assert rep["verdict"] == "warn"
    assert proc.returncode == 0
    strict = run_check("ort-gpu", "nvidia-cu13", args=("--json", "--no-smoke", "--strict"),
                       extra_env=_nvml_env(fake_nvml_dir, f"driver=580.159.04;cuda=13000;{H200}"))
    assert strict.returncode == 1


@pytest.mark.realwheels
def test_fake_driver_too_old(fake_nvml_dir: Path) -> None:
    rep = report_of(run_check("ort-gpu", "nvidia-cu13",
                              extra_env=_nvml_env(fake_nvml_dir, f"driver=550.54.14;cuda=12040;{H200}")))
    f = finding(rep, "driver-too-old")
    assert "550.54.14" in f["detail"]
    assert "onnxruntime-cuda-12" in f["fix"]


@pytest.mark.realwheels
def test_fake_driver_without_devices(fake_nvml_dir: Path) -> None:
    rep = report_of(run_check("ort-gpu", "nvidia-cu13", extra_env=_nvml_env(fake_nvml_dir, "driver=580.159.04;cuda=13000")))
    assert errors(rep) == ["no-gpu-visible"]


@pytest.mark.realwheels
def test_fake_driver_hidden_by_cuda_visible_devices(fake_nvml_dir: Path) -> None:
    env = {**_nvml_env(fake_nvml_dir, f"driver=580.159.04;cuda=13000;{H200}"), "CUDA_VISIBLE_DEVICES": ""}
    rep = report_of(run_check("ort-gpu", "nvidia-cu13", extra_env=env))
    assert "unset CUDA_VISIBLE_DEVICES" in finding(rep, "no-gpu-visible")["fix"]


@pytest.mark.realwheels
def test_fake_driver_invalid_device_id(fake_nvml_dir: Path) -> None:
    rep = report_of(run_check("ort-gpu", "nvidia-cu13", args=("--json", "--no-smoke", "--device-id", "3"),
                              extra_env=_nvml_env(fake_nvml_dir, f"driver=580.159.04;cuda=13000;{H200}")))
    assert errors(rep) == ["invalid-device-ordinal"]


@pytest.mark.realwheels
def test_fake_driver_pascal_gpu_on_a_cuda_13_build(fake_nvml_dir: Path) -> None:
    spec = "driver=580.159.04;cuda=13000;dev=NVIDIA GeForce GTX 1080,6.1,8192,8000,GPU-uuid-1,0"
    rep = report_of(run_check("ort-gpu", "nvidia-cu13", extra_env=_nvml_env(fake_nvml_dir, spec)))
    assert "sm_61" in finding(rep, "gpu-arch-unsupported")["detail"]


@pytest.mark.realwheels
def test_fake_driver_library_mismatch(fake_nvml_dir: Path) -> None:
    rep = report_of(run_check("ort-gpu", "nvidia-cu13", extra_env=_nvml_env(fake_nvml_dir, "init=18")))
    assert "driver-library-mismatch" in errors(rep)
    assert "driver-missing" not in errors(rep)


@pytest.mark.realwheels
def test_check_never_imports_onnxruntime_or_torch() -> None:
    code = ("import sys\nfrom ortdoctor.cli import check\nfrom ortdoctor.doctor.check import run_check\n"
            "from ortdoctor.report.json_report import dumps\nfrom ortdoctor.report.text import render\n"
            "r = run_check(smoke=False)\ndumps(r)\nrender(r)\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('onnxruntime', 'torch')]\n"
            "print(r.env.ort.active, bad)\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(testenvs.ensure("ort-gpu")), str(testenvs.ensure("nvidia-cu13"))])
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "onnxruntime-gpu []"


@pytest.mark.realwheels
def test_nvml_without_libcuda_fails_the_health_check(tmp_path: Path) -> None:
    """A container started with NVIDIA_DRIVER_CAPABILITIES=utility: NVML answers, libcuda.so.1 is not
    there. The `--no-smoke` health check of docs/recipes.md must fail, not pass."""
    nvml = fake_nvml.build(tmp_path / "utility-only", libcuda=False).parent
    proc = run_check("ort-gpu", "nvidia-cu13", extra_env=_nvml_env(nvml, f"driver=580.159.04;cuda=13000;{H200}"))
    rep = report_of(proc)
    assert rep["driver"]["available"] is True
    assert "libcuda-missing" in errors(rep)
    assert proc.returncode == 1


@pytest.mark.parametrize("encoding", ["cp1252", "latin-1"])
def test_a_console_that_is_not_utf8_gets_ascii_marks_not_a_crash(encoding: str) -> None:
    # Windows consoles redirected to a file write cp1252; the report's marks become ASCII there
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(testenvs.ensure("ort-cpu"))]),
               PYTHONIOENCODING=encoding, PYTHONUTF8="0")
    for args in (("--no-smoke",), ("--no-smoke", "-q"), ("--no-smoke", "--format", "markdown"), ("--no-smoke", "--json")):
        proc = subprocess.run([sys.executable, "-m", "ortdoctor", "check", *args], env=env, capture_output=True,
                              timeout=120, cwd=ROOT)
        out, err = proc.stdout.decode(encoding), proc.stderr.decode(encoding)
        assert proc.returncode == 1, err
        assert "internal error" not in err
        if "--json" in args:
            assert validate(json.loads(out))["verdict"] == "fail"
        else:
            assert "x FAIL: onnxruntime 1.31.1 cannot use the GPU here" in out


def test_quick_start_report_says_each_thing_once() -> None:
    # README's quick start on a machine without a driver: onnxruntime-gpu with its CUDA 13 wheels
    proc = run_check("ort-gpu", "nvidia-cu13", args=())
    out = proc.stdout
    assert proc.returncode == 1, proc.stderr
    assert "[driver-missing]" in out
    assert "[smoke-fell-back-to-cpu]" not in out  # its cause (driver-missing) carries the smoke evidence
    assert out.count("export LD_LIBRARY_PATH=") <= 1  # one shell line for everything a preload finds
    assert "[default-loader-picks-other-copy]" not in out or "[cuda-lib-not-loadable]" not in out
    assert "((" not in out
    assert ") (" not in out  # no run of parentheses in a sentence
    notes = [line for line in out.splitlines() if line.startswith("ℹ ") and "note" in line]
    assert len(notes) <= 1
    data = report_of(run_check("ort-gpu", "nvidia-cu13", args=("--json", "--no-smoke")))
    assert len(json.dumps(data)) < 40_000  # the ld.so cache is trimmed to the GPU libraries
    assert all(k.startswith(("libcu", "libnv", "libonnx", "libtorch", "libc10")) for k in data["system"]["ldconfig"])

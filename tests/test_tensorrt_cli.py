"""`check`, `check --provider tensorrt`, `preload --tensorrt` and the hook end to end: the real onnxruntime-gpu
1.31.1 wheel and its CUDA 13 wheels, gcc-built TensorRT stand-ins laid out as pip installs them, and the
TensorRT-RTX plugin (a stand-in built from the real wheel's ELF facts, and the real wheel).

This machine has no GPU and no driver: the TensorRT session cannot succeed. What is tested is what
ortdoctor reports: the libraries it chose and proved mapped, the session it asked for, and why it failed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import plugin_wheels, testenvs
from tests.support.fake_tensorrt import build_tensorrt, install_plugin, install_tensorrt_pip
from tests.support.report_schema import validate

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.realwheels


@pytest.fixture(scope="module")
def trt10_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("trt10")
    install_tensorrt_pip(base / "site", build_tensorrt(base / "build", "10.16.1.11"), "10.16.1.11", 13)
    return base / "site"


@pytest.fixture(scope="module")
def trt11_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("trt11")
    install_tensorrt_pip(base / "site", build_tensorrt(base / "build", "11.4.0.106"), "11.4.0.106", 13)
    return base / "site"


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("plugin")
    install_plugin(base / "site", base / "build")
    return base / "site"


def cli(*args: str, sites: tuple[Path, ...] = (), env: dict[str, str] | None = None,
        cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    paths = [str(ROOT), *(str(s) for s in sites), str(testenvs.ensure("ort-gpu")), str(testenvs.ensure("nvidia-cu13"))]
    full = {k: v for k, v in os.environ.items() if not k.startswith("ORTDOCTOR_") and k not in (
        "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "PYTHONWARNINGS")}
    full.update({"PYTHONPATH": os.pathsep.join(paths), "NO_COLOR": "1", "ORTDOCTOR_CACHE": "0", **(env or {})})
    return subprocess.run([sys.executable, "-m", "ortdoctor", *args], env=full, capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def data(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert "Traceback" not in proc.stderr, proc.stderr
    parsed: dict[str, Any] = json.loads(proc.stdout)
    return parsed


def checked(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """A `check --json` report, validated against the shipped JSON Schema."""
    return validate(data(proc))


def finding(report: dict[str, Any], fid: str) -> dict[str, Any]:
    hits: list[dict[str, Any]] = [f for f in report["findings"] if f["id"] == fid]
    assert hits, (fid, [f["id"] for f in report["findings"]])
    return hits[0]


def test_1_31_1_with_tensorrt_11_names_both_majors_and_pins_tensorrt_10(trt11_site: Path) -> None:
    report = checked(cli("check", "--no-smoke", "--json", sites=(trt11_site,)))
    f = finding(report, "tensorrt-major-mismatch")
    assert f["title"] == "TensorRT 11 is installed; the TensorRT EP needs TensorRT 10"
    assert "links libnvinfer.so.10 and libnvonnxparser.so.10 (TensorRT 10)" in f["detail"]
    assert "tensorrt-cu13-libs 11.4.0.106" in f["detail"]
    assert "libnvinfer.so.11" in f["detail"]
    assert f["fix"].startswith(f"{sys.executable} -m pip install 'tensorrt-cu13==10.*' --extra-index-url "
                               "https://pypi.nvidia.com")
    (install,) = report["tensorrt"]["installs"]
    assert (install["major"], install["version"], install["cuda_major"]) == (11, "11.4.0.106", 13)


def test_the_text_report_has_a_tensorrt_row(trt11_site: Path) -> None:
    out = cli("check", "--no-smoke", sites=(trt11_site,)).stdout
    row = next(line for line in out.splitlines() if line.startswith("TensorRT"))
    assert "⚠ TensorRT 11.4.0.106 (tensorrt-cu13-libs, CUDA 13)" in row
    assert "the TensorRT EP links libnvinfer.so.10, libnvonnxparser.so.10" in row


def test_preload_tensorrt_loads_the_matching_files_after_the_cuda_set(trt10_site: Path) -> None:
    proc = cli("preload", "--tensorrt", "--json", sites=(trt10_site,))
    result = data(proc)
    assert proc.returncode == 0, result
    names = [x["name"] for x in result["loaded"] if x["loaded_by"] is None]
    assert names[-3:] == ["nvinfer", "nvinfer_plugin", "nvonnxparser"]  # after the whole CUDA set
    assert names.index("cudart") < names.index("nvinfer")
    nvinfer = next(x for x in result["loaded"] if x["name"] == "nvinfer")
    assert nvinfer["path"] == str(trt10_site / "tensorrt_libs" / "libnvinfer.so.10")
    assert nvinfer["mapped"] == nvinfer["path"]  # proved in /proc/self/maps
    assert nvinfer["function_version"] == "10.16.1"  # getInferLibVersion() of the loaded file
    assert nvinfer["version"] == "10.16.1.11"
    parser = next(x for x in result["loaded"] if x["name"] == "nvonnxparser")
    assert parser["function_version"] == "10.16.1"


def test_preload_without_tensorrt_loads_none(trt10_site: Path) -> None:
    result = data(cli("preload", "--json", sites=(trt10_site,)))
    assert not any(x["name"].startswith("nv") and x["name"] != "nvrtc" for x in result["loaded"])


def test_preload_tensorrt_with_only_tensorrt_11_fails_with_the_fix(trt11_site: Path) -> None:
    proc = cli("preload", "--tensorrt", "--json", sites=(trt11_site,))
    result = data(proc)
    assert proc.returncode == 1
    assert [(x["name"], x["soname"]) for x in result["failed"]] == [("nvinfer", "libnvinfer.so.10")]
    f = next(x for x in result["findings"] if x["id"] == "tensorrt-major-mismatch")
    assert f["severity"] == "error"
    assert "pip install 'tensorrt-cu13==10.*'" in f["fix"]


def test_preload_tensorrt_dry_run_loads_nothing(trt10_site: Path) -> None:
    result = data(cli("preload", "--tensorrt", "--dry-run", "--json", sites=(trt10_site,)))
    nvinfer = next(x for x in result["loaded"] if x["name"] == "nvinfer")
    assert nvinfer["mapped"] is None
    # the TensorRT row of the execution-provider table preloads TensorRT after the CUDA set; the CUDA rows do not
    by_row = data(cli("preload", "--provider", "tensorrt", "--dry-run", "--json", sites=(trt10_site,)))
    assert [x["name"] for x in by_row["loaded"]] == [x["name"] for x in result["loaded"]]
    cuda = data(cli("preload", "--provider", "cuda-plugin", "--dry-run", "--json", sites=(trt10_site,)))
    assert "nvinfer" not in [x["name"] for x in cuda["loaded"]]


def test_the_hook_loads_tensorrt_when_asked(trt10_site: Path, tmp_path: Path) -> None:
    code = ("import ortdoctor.hook, json\n"
            "maps = open('/proc/self/maps').read()\n"
            "print(json.dumps({'mapped': 'tensorrt_libs/libnvinfer.so.10' in maps,"
            " 'loaded': [x.name for x in ortdoctor.hook.result.loaded]}))\n")
    paths = [str(ROOT), str(trt10_site), str(testenvs.ensure("ort-gpu")), str(testenvs.ensure("nvidia-cu13"))]
    base = {k: v for k, v in os.environ.items() if not k.startswith("ORTDOCTOR_") and k != "LD_LIBRARY_PATH"}
    base.update({"PYTHONPATH": os.pathsep.join(paths), "ORTDOCTOR_CACHE": "0"})
    asked = subprocess.run([sys.executable, "-c", code], env={**base, "ORTDOCTOR_TENSORRT": "1"},
                           capture_output=True, text=True, timeout=120, cwd=tmp_path)
    plain = subprocess.run([sys.executable, "-c", code], env=base, capture_output=True, text=True, timeout=120,
                           cwd=tmp_path)
    assert json.loads(asked.stdout)["mapped"] is True, asked.stderr
    assert "nvonnxparser" in json.loads(asked.stdout)["loaded"]
    assert json.loads(plain.stdout)["mapped"] is False, plain.stderr


def test_check_provider_tensorrt_runs_the_session_on_the_tensorrt_ep(trt10_site: Path, tmp_path: Path) -> None:
    proc = cli("check", "--provider", "tensorrt", "--provider-option", "trt_fp16_enable=1", "--json",
               sites=(trt10_site,), env={"TMPDIR": str(tmp_path)})
    report = checked(proc)
    smoke = report["smoke"]
    assert smoke["ep"] == "TensorrtExecutionProvider"
    assert smoke["ran"] is True
    assert smoke["ok"] is False
    options = smoke["provider_options"]
    assert options["trt_engine_cache_enable"] == "1"
    assert options["trt_engine_cache_path"].startswith(str(tmp_path / "ortdoctor-trt-"))
    assert options["trt_fp16_enable"] == "1"  # passed through
    assert not os.path.exists(options["trt_engine_cache_path"])  # the engine cache is removed afterwards
    loaded = {x["name"]: x for x in smoke["preload"]["loaded"]}
    assert loaded["nvinfer"]["path"] == str(trt10_site / "tensorrt_libs" / "libnvinfer.so.10")
    # The real 1.31.1 provider finds the stand-ins but not every function it calls: ORT's own message.
    # no driver here: that comes first, and what the files lack stays a cause of its own beside it
    assert [c["id"] for c in smoke["causes"] if not c["consequence"]] == ["driver-missing", "tensorrt-ep-create-failed"]
    assert "undefined symbol: createNvOnnxParserRefitter_INTERNAL" in json.dumps(smoke["causes"])
    f = finding(report, "tensorrt-ep-create-failed")  # the cause, with the smoke session's ORT log line
    assert "The smoke session's ORT log" in f["detail"]
    assert "TensorRT 10.x" in f["fix"]  # 1.31 links TensorRT 10; its minor is not published
    assert proc.returncode == 1


def test_check_provider_tensorrt_without_tensorrt_is_an_error() -> None:
    report = checked(cli("check", "--provider", "tensorrt", "--json"))
    f = finding(report, "tensorrt-unavailable")
    assert f["severity"] == "error"
    assert "pip install 'tensorrt-cu13==10.*' --extra-index-url https://pypi.nvidia.com" in f["fix"]
    causes = report["smoke"]["causes"]
    assert [c["id"] for c in causes if not c["consequence"]][:2] == ["driver-missing", "tensorrt-unavailable"]
    assert "libnvinfer.so.10: cannot open shared object file" in json.dumps(causes)  # ORT's own log line


def test_the_smoke_child_registers_the_plugin_and_lists_ort_devices(plugin_site: Path) -> None:
    proc = cli("check", "--json", sites=(plugin_site,))
    smoke = checked(proc)["smoke"]
    (plugin,) = smoke["plugin_eps"]
    assert plugin["package"] == "onnxruntime-ep-nv-tensorrt-rtx-cu13"
    assert plugin["ep_name"] == "NvTensorRTRTXExecutionProvider"
    assert plugin["registered"] is False
    # the bundled TensorRT-RTX libraries were loaded by path, the bundled cudart was not
    assert [Path(p).name for p in plugin["preloaded"]] == ["libtensorrt_rtx.so.1.7.1", "libtensorrt_onnxparser_rtx.so.1.7.1"]
    assert "libcuda.so.1: cannot open shared object file" in plugin["error"]  # no driver here
    assert any(d["ep_name"] == "CPUExecutionProvider" and d["type"] == "CPU" for d in smoke["ep_devices"])
    text = cli("check", sites=(plugin_site,)).stdout
    assert "plugin NvTensorRTRTXExecutionProvider (onnxruntime-ep-nv-tensorrt-rtx-cu13 0.5.0): not registered" in text
    assert "ORT devices (get_ep_devices): CPUExecutionProvider CPU" in text
    assert "NVML: no GPU" in text
    assert "Plugin EPs   ⚠ onnxruntime-ep-nv-tensorrt-rtx-cu13 0.5.0: NvTensorRTRTXExecutionProvider (bundles " \
           "libcudart.so.13.4.36)" in text


def test_the_plugin_stage_writes_nothing_into_the_package(plugin_site: Path) -> None:
    before = sorted(p.name for p in (plugin_site / "onnxruntime_ep_nv_tensorrt_rtx").iterdir())
    cli("check", "--json", sites=(plugin_site,))
    assert sorted(p.name for p in (plugin_site / "onnxruntime_ep_nv_tensorrt_rtx").iterdir()) == before


def test_the_real_trt_rtx_plugin_beside_the_cuda_13_wheels() -> None:
    site = plugin_wheels.ensure_trt_rtx_cu13()
    report = checked(cli("check", "--json", sites=(site,)))
    f = finding(report, "plugin-ep-bundled-cuda-library")
    assert "ships libcudart.so.13.4.36 (soname libcudart.so.13)" in f["detail"]
    assert "/nvidia/cu13/lib/libcudart.so.13 (13.0.96)" in f["detail"]
    assert "its Python code does not name it" in f["detail"]
    assert "libtensorrt_plugins.so's RUNPATH has an empty entry" in f["detail"]
    (plugin,) = report["smoke"]["plugin_eps"]
    # the error scripts/data/logs/probe_plugin_cu13.log recorded for the same wheel on a host without a driver
    assert "libcuda.so.1: cannot open shared object file" in plugin["error"]

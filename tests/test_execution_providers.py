"""The execution-provider table (ortdoctor/core/execution_providers.py) drives `--provider`, the smoke request,
the child's session, the preload and the report: the CUDA plugin EP, one row of it, shows in every one."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click
import pytest

from ortdoctor.cli.check import command as check_command
from ortdoctor.cli.check_argv import OPTIONS
from ortdoctor.core.ep_names import CPU_EP, CUDA_EP, TENSORRT_EP
from ortdoctor.core.execution_providers import (
    EXECUTION_PROVIDERS,
    PROVIDER_CHOICES,
    provider_for,
    provider_named,
    smoke_provider,
)
from ortdoctor.diagnose.merge import merge_smoke
from ortdoctor.doctor.check import CheckOptions
from ortdoctor.prove.smoke import plugin_session
from ortdoctor.prove.smoke.runner import SmokeRequest, SmokeResult
from ortdoctor.report.model import Report, verdict_of
from ortdoctor.report.text import render
from tests.support.sharedlibs import build_so
from tests.test_diagnose import healthy_env


def test_one_row_per_provider_and_the_choices_are_its_column() -> None:
    assert PROVIDER_CHOICES == ("cuda", "tensorrt", "cuda-plugin", "tensorrt-rtx")
    assert len({p.choice for p in EXECUTION_PROVIDERS}) == len(EXECUTION_PROVIDERS)
    plugin = provider_for("cuda-plugin")
    # microsoft/onnxruntime#29544: the plugin build registers as CUDAExecutionProvider, same library name
    assert (plugin.name, plugin.library, plugin.windows_library) == (
        CUDA_EP, "libonnxruntime_providers_cuda.so", "onnxruntime_providers_cuda.dll")
    assert plugin.plugin == "onnxruntime"
    assert provider_named(CUDA_EP) == provider_for("cuda")  # the built-in row answers for the shared name
    assert provider_named(CPU_EP) is None
    with pytest.raises(KeyError):
        provider_for("rocm")


def test_the_probe_and_the_text_reader_take_their_names_from_the_table() -> None:
    from ortdoctor.diagnose import text_observe
    from ortdoctor.probes import ort

    assert ort._CUDA_PROVIDERS == (provider_for("cuda").library, provider_for("cuda").windows_library)
    assert ort._TRT_PROVIDERS == (provider_for("tensorrt").library, provider_for("tensorrt").windows_library)
    assert set(text_observe._GPU_EPS) == {p.name for p in EXECUTION_PROVIDERS}


def test_both_parsers_of_check_offer_every_row() -> None:
    option = next(p for p in check_command.params if p.name == "provider")
    assert isinstance(option.type, click.Choice)
    assert tuple(option.type.choices) == PROVIDER_CHOICES
    assert option.default == "cuda"
    row = next(o for o in OPTIONS if o.name == "provider")
    assert tuple(row.choices) == PROVIDER_CHOICES
    assert "cuda-plugin: CUDAExecutionProvider as a plugin EP" in (option.help or "")


def test_the_smoke_request_carries_the_row() -> None:
    request = CheckOptions(smoke_provider="cuda-plugin").smoke_request_for()
    assert (request.provider, request.ep, request.tensorrt) == ("cuda-plugin", CUDA_EP, False)
    child = request.to_child()
    assert child["plugin"] == "onnxruntime"
    assert child["plugin_library"] == ("onnxruntime_providers_cuda.dll" if os.name == "nt"
                                       else "libonnxruntime_providers_cuda.so")
    assert child["device_option"] is None  # the device is ORT's OrtEpDevice, not an option
    assert child["gpu"] is True

    trt = CheckOptions(smoke_provider="tensorrt").smoke_request_for()
    assert (trt.ep, trt.tensorrt) == (TENSORRT_EP, True)  # TensorRT is among its preload families
    assert trt.to_child()["engine_cache_option"] == "trt_engine_cache_path"
    assert trt.to_child()["smoke_options"] == {"trt_engine_cache_enable": "1"}

    cuda = CheckOptions().smoke_request_for().to_child()
    assert (cuda["plugin"], cuda["device_option"], cuda["cuda_graph_option"]) == (None, "device_id",
                                                                                  "enable_cuda_graph")
    cpu = SmokeRequest(ep=CPU_EP).to_child()
    assert (cpu["provider"], cpu["gpu"]) == (None, False)


class _Device:
    def __init__(self, ep_name: str) -> None:
        self.ep_name = ep_name


class _FakeOrt:
    """What the child uses of onnxruntime's plugin API, recording the registrations."""

    def __init__(self, package_dir: Path, registered: tuple[str, ...] = ()) -> None:
        self.__file__ = str(package_dir / "__init__.py")
        self.__version__ = "1.32.0"
        self.registered: list[tuple[str, str]] = [(name, "") for name in registered]

    def get_ep_devices(self) -> list[_Device]:
        return [_Device(name) for name, _ in self.registered] + [_Device(CPU_EP)]

    def register_execution_provider_library(self, name: str, path: str) -> None:
        self.registered.append((name, path))


def _request(choice: str) -> dict[str, Any]:
    return SmokeRequest(provider=choice, ep=provider_for(choice).name).to_child()


def test_the_child_registers_the_cuda_plugin_from_onnxruntimes_own_directory(tmp_path: Path) -> None:
    package = tmp_path / "site" / "onnxruntime"
    library = build_so(package / "capi", "libonnxruntime_providers_cuda.so")
    ort = _FakeOrt(package)
    result: dict[str, Any] = {"checks": {}}
    device = plugin_session.plugin_device(ort, CUDA_EP, _request("cuda-plugin"), 0, result)
    assert device.ep_name == CUDA_EP
    assert ort.registered == [(CUDA_EP, str(library))]
    assert result["checks"] == {"plugin_library": str(library), "plugin_registered_by": "ortdoctor",
                                "plugin_devices": 1}


def test_a_plugin_onnxruntime_registered_itself_is_used_as_it_is(tmp_path: Path) -> None:
    ort = _FakeOrt(tmp_path / "onnxruntime", registered=(CUDA_EP,))
    result: dict[str, Any] = {"checks": {}}
    plugin_session.plugin_device(ort, CUDA_EP, _request("cuda-plugin"), 0, result)
    assert ort.registered == [(CUDA_EP, "")]  # nothing registered twice
    assert result["checks"]["plugin_registered_by"] == "onnxruntime"
    with pytest.raises(plugin_session.PluginUnavailable, match="device 1 is not one of them"):
        plugin_session.plugin_device(ort, CUDA_EP, _request("cuda-plugin"), 1, {"checks": {}})


def test_an_onnxruntime_without_the_plugin_api_says_so(tmp_path: Path) -> None:
    old = SimpleNamespace(__file__=str(tmp_path / "__init__.py"), __version__="1.20.0")
    with pytest.raises(plugin_session.PluginUnavailable, match=r"1\.22 or later"):
        plugin_session.plugin_device(old, CUDA_EP, _request("cuda-plugin"), 0, {"checks": {}})


def test_the_report_names_the_plugin_row() -> None:
    smoke = SmokeResult(ran=True, ok=True, providers=(CUDA_EP, CPU_EP), device_id=0, ep=CUDA_EP,
                        provider="cuda-plugin")
    assert smoke_provider(smoke) == provider_for("cuda-plugin")
    assert smoke.to_json()["provider"] == "cuda-plugin"
    env = healthy_env()
    report = Report(verdict=verdict_of([]), findings=(), env=env, plan=None, matrix_path=None, smoke=smoke)
    assert f"ran on {CUDA_EP} (the CUDA plugin EP) (device 0)" in render(report, color=False)

    failed = SmokeResult(ran=True, ok=False, error="no device", finding_id="smoke-failed", ep=CUDA_EP,
                         provider="cuda-plugin")
    (finding,) = merge_smoke([], failed)
    assert "did not run on the CUDA plugin EP" in finding.detail


@pytest.mark.realwheels
def test_the_child_runs_a_session_through_the_plugin_interface_of_the_real_onnxruntime() -> None:
    """The plugin path of the child on the real onnxruntime (CPU build 1.31.1, no GPU here): the CPU EP, which
    onnxruntime lists in get_ep_devices() itself, stands in for a registered plugin; the session is put on its
    device with add_provider_for_devices, runs the model and gives the right numbers."""
    import json
    import subprocess
    import sys

    from ortdoctor.prove.smoke import child
    from tests.support import testenvs

    root = Path(__file__).resolve().parents[1]
    request = {"ep": CPU_EP, "plugin": "onnxruntime", "plugin_library": "unused", "gpu": False, "preload": False,
               "plugins": False, "runs": 1}
    code = f"import sys; sys.path.insert(0, {str(root)!r}); from ortdoctor.prove.smoke.child import main; sys.exit(main())"
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(request)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(testenvs.ensure("ort-cpu"))}, timeout=120,
                          cwd=str(root), check=False)
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith(child.RESULT_PREFIX), proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(line[len(child.RESULT_PREFIX):])
    assert result["ok"] is True, result
    assert result["providers"][0] == CPU_EP
    assert result["checks"]["plugin_registered_by"] == "onnxruntime"
    assert result["checks"]["plugin_devices"] >= 1

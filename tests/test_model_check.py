"""``check_model`` end to end with the real onnxruntime wheels in a child, plus the pure summarising parts.

This machine has no GPU and no driver: with onnxruntime-gpu the CUDA EP cannot be created, so the report
must say the model ran on the CPU and why (ORT's own message), never claim GPU placement. What a working
CUDA EP reports is checked on the GPU machine (scripts/model_check_gpu_demo.py); here the summariser gets
that answer as data, in the shape the child produces.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ortdoctor.core.exitcodes import FAIL, USAGE
from ortdoctor.core.facts import Device, DriverInfo
from ortdoctor.diagnose import model as mf
from ortdoctor.doctor.model import check_model
from ortdoctor.prove import ort_placement
from ortdoctor.prove.model_check import child, runner
from ortdoctor.prove.model_check.inspect import inspect_model
from ortdoctor.prove.model_check.placement import summarise_placement
from ortdoctor.report.model_check import render_model
from tests.support import models, testenvs


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return models.build_good(tmp_path_factory.mktemp("good"))


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return models.build_bad(tmp_path_factory.mktemp("bad"))


def _env(*names: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(str(testenvs.ensure(n)) for n in names)}


def ids(report: object) -> list[str]:
    return [f.id for f in report.findings]  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------------
# Real onnxruntime (CPU build) in the child
# --------------------------------------------------------------------------------------------------
@pytest.mark.realwheels
def test_cpu_build_places_everything_on_cpu_and_says_so(good: dict[str, Path]) -> None:
    report = check_model(good["float"], input_shapes=["X=2x64"], env=_env("ort-cpu"))
    assert report.ran
    assert report.ort_version == "1.31.1"
    assert report.providers == ("CPUExecutionProvider",)
    assert not report.cuda_ep_active
    p = report.placement
    assert p is not None
    # both of ORT 1.31's own sources were read
    assert p.source == ("ep-graph-assignment-info", "verbose-log")
    # ORT's own nodes, not the file's: MatMulAddFusion (level 1, before partitioning) made a Gemm, and
    # the CPU EP fused Relu into it later (the final graph has one node)
    assert p.nodes_by_provider == {"CPUExecutionProvider": 2}
    assert p.op_types_by_provider == {"CPUExecutionProvider": {"Gemm": 1, "Relu": 1}}
    assert p.final_graph_nodes == 1
    assert p.gpu_share == 0.0
    assert ids(report) == ["model-not-on-gpu"]
    assert "no CUDA EP at all" in report.findings[0].detail
    assert report.exit_code == FAIL
    run = report.run
    assert run is not None
    assert run["cpu"]["ok"]
    assert run["cpu"]["provider"] == "CPUExecutionProvider"
    assert run["inputs_valid"] is True  # the CPU EP accepted the inputs; no GPU run to compare
    assert not run["ep"]["ok"]
    assert "not created" in run["ep"]["skipped"]
    assert run["agree"] is None
    js = report.to_json()
    assert js["placement"]["gpu_share"] == 0.0
    assert js["file"]["inputs"][0] == {"name": "X", "dtype": "float32", "shape": ["batch", 64], "dynamic": True}
    text = render_model(report)
    assert "0% of nodes on the CUDA EP" in text
    assert "CPU EP" in text


@pytest.mark.realwheels
def test_quantized_model_on_cpu_build(good: dict[str, Path]) -> None:
    report = check_model(good["quantized"], input_shapes={"X": (4, 64)}, env=_env("ort-cpu"))
    assert report.placement is not None
    cpu_ops = report.placement.op_types_by_provider["CPUExecutionProvider"]
    assert cpu_ops["MatMulInteger"] == 1
    assert cpu_ops["DynamicQuantizeLinear"] == 1
    q = next(f for f in report.findings if f.id == "model-quantized-ops-on-cpu")
    assert q.severity == "info"  # not verified on a GPU here, and the finding says so
    assert "Not verified" in q.detail
    assert report.run is not None
    assert report.run["cpu"]["ok"]


@pytest.mark.realwheels
def test_loop_model_reports_control_flow(good: dict[str, Path]) -> None:
    report = check_model(good["loop"], env=_env("ort-cpu"))
    cf = next(f for f in report.findings if f.id == "model-control-flow-blocks-cuda-graph")
    assert cf.severity == "info"
    assert "Loop (loop)" in cf.detail
    asked = check_model(good["loop"], cuda_graph=True, env=_env("ort-cpu"))
    assert next(f for f in asked.findings if f.id == "model-control-flow-blocks-cuda-graph").severity == "warning"
    # the Loop's input shape is fixed: no dynamic-shape finding
    assert "model-dynamic-shapes-block-cuda-graph" not in ids(asked)


@pytest.mark.realwheels
def test_shape_model_with_cuda_graph_asked(good: dict[str, Path]) -> None:
    report = check_model(good["shape"], cuda_graph=True, input_shapes=["X=2x8x8"], env=_env("ort-cpu"))
    assert "model-dynamic-shapes-block-cuda-graph" in ids(report)
    assert report.run is not None
    assert report.run["cpu"]["ok"]


@pytest.mark.realwheels
def test_gpu_wheel_without_driver_is_honest(good: dict[str, Path]) -> None:
    report = check_model(good["float"], env=_env("ort-gpu", "nvidia-cu13"))
    assert report.providers == ("CPUExecutionProvider",)
    assert not report.cuda_ep_active
    (f,) = [f for f in report.findings if f.id == "model-not-on-gpu"]
    # ORT's real reason, after ortdoctor's preload found the CUDA wheels: no driver library
    assert "libcuda.so.1" in f.detail
    assert "Failed to create CUDAExecutionProvider" in f.detail
    assert report.placement is not None
    assert report.placement.gpu_share == 0.0
    assert report.preload is not None
    assert report.preload["attempted"]


@pytest.mark.realwheels
@pytest.mark.parametrize("case", ["not_onnx", "truncated", "external_missing", "opset_too_new"])
def test_bad_models_give_finding_and_exit_code_2(bad: dict[str, Path], case: str) -> None:
    expected = {"not_onnx": "model-invalid", "truncated": "model-truncated",
                "external_missing": "model-external-data-missing", "opset_too_new": "model-opset-unsupported"}
    report = check_model(bad[case], env=_env("ort-cpu"))
    assert ids(report)[0] == expected[case]
    assert report.exit_code == USAGE
    assert report.to_json()["findings"][0]["id"] == expected[case]


@pytest.mark.realwheels
def test_opset_finding_quotes_onnxruntime(bad: dict[str, Path]) -> None:
    report = check_model(bad["opset_too_new"], env=_env("ort-cpu"))
    assert report.ran  # this one is onnxruntime's verdict, not the header's
    f = report.findings[0]
    assert "ai.onnx 99" in f.detail
    assert "up to opset 26" in f.detail  # ORT 1.31.1's own "Current official support ... till opset 26"
    assert "opset_version" in (f.fix or "")


@pytest.mark.realwheels
def test_unknown_input_name_is_reported(good: dict[str, Path]) -> None:
    report = check_model(good["float"], input_shapes=["nope=1x64"], env=_env("ort-cpu"))
    assert "model-run-failed" in ids(report)


def test_bad_model_never_starts_a_child(bad: dict[str, Path]) -> None:
    report = check_model(bad["truncated"], python="/nonexistent/python")
    assert not report.ran
    assert ids(report) == ["model-truncated"]


# --------------------------------------------------------------------------------------------------
# Child crashes and hangs (test seam: the child's interpreter is swapped for a script)
# --------------------------------------------------------------------------------------------------
def _script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "fake-python"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_crashing_child(good: dict[str, Path], tmp_path: Path) -> None:
    report = check_model(good["float"], python=_script(tmp_path, "echo about to crash >&2; kill -SEGV $$"))
    assert ids(report) == ["model-check-failed"]
    assert "SIGSEGV" in report.findings[0].detail
    assert "about to crash" in report.findings[0].detail
    assert report.exit_code == FAIL


def test_hanging_child(good: dict[str, Path], tmp_path: Path) -> None:
    report = check_model(good["float"], timeout=1, python=_script(tmp_path, "exec sleep 30"))
    assert ids(report) == ["model-check-failed"]
    assert "within 1 s" in report.findings[0].detail


def test_child_without_onnxruntime(good: dict[str, Path], tmp_path: Path) -> None:
    empty = tmp_path / "empty-site"
    empty.mkdir()
    report = check_model(good["float"], env={**os.environ, "PYTHONPATH": str(empty)})
    if report.ran and report.child_failure and "import onnxruntime" in report.child_failure:
        assert ids(report)[-1] == "model-check-failed"
    else:  # an onnxruntime in the venv itself: then it is simply used
        assert report.ort_version


def test_result_marker_is_shared() -> None:
    assert runner.RESULT_MARKER == child.RESULT_MARKER


# --------------------------------------------------------------------------------------------------
# Log parsing and placement summary (pure)
# --------------------------------------------------------------------------------------------------
_PREFIX = "2026-01-01 00:00:00.0 [V:onnxruntime:, session_state.cc:1580 VerifyEachNodeIsAssignedToAnEp]"
MULTI_LOG = "\n".join([
    "2026-01-01 00:00:00.0 [I:onnxruntime:, transformer_memcpy.cc:393 AddCopyNode] Add MemcpyToHost before "
    "X_quant for CPUExecutionProvider",
    f"{_PREFIX} Node placements",
    f"{_PREFIX}  Node(s) placed on [CUDAExecutionProvider]. Number of nodes: 3",
    "   Mul (rescale)",
    "   MemcpyToHost (Memcpy)",
    "   MemcpyFromHost (Memcpy_token_1)",
    f"{_PREFIX}  Node(s) placed on [CPUExecutionProvider]. Number of nodes: 3",
    f"{_PREFIX}   DynamicQuantizeLinear (X_quant)",
    f"{_PREFIX}   MatMulInteger (matmul_integer)",
    f"{_PREFIX}   Shape (shape)",
    "2026-01-01 00:00:00.0 [W:onnxruntime:, session_state.cc:1300 VerifyEachNodeIsAssignedToAnEp] Some nodes "
    "were not assigned to the preferred execution providers",
])


def test_parse_placements_both_line_styles() -> None:
    parsed = ort_placement.parse_placements(MULTI_LOG)
    assert parsed is not None
    assert parsed["all_on"] is None
    cuda = parsed["providers"]["CUDAExecutionProvider"]
    assert cuda["count"] == 3
    assert [n["op_type"] for n in cuda["nodes"]] == ["Mul", "MemcpyToHost", "MemcpyFromHost"]
    cpu = parsed["providers"]["CPUExecutionProvider"]["nodes"]
    assert cpu == [{"op_type": "DynamicQuantizeLinear", "name": "X_quant"},
                   {"op_type": "MatMulInteger", "name": "matmul_integer"},
                   {"op_type": "Shape", "name": "shape"}]
    assert child.parse_memcpy_added(MULTI_LOG)[0]["op_type"] == "MemcpyToHost"
    assert ort_placement.parse_placements("nothing here") is None


def test_summary_of_a_cuda_session(good: dict[str, Path]) -> None:
    answer = {"model": "m.onnx", "providers": ["CUDAExecutionProvider", "CPUExecutionProvider"],
              "cuda_ep_active": True, "assignment_source": ["verbose-log"], "assignment": None,
              "placements": ort_placement.parse_placements(MULTI_LOG), "memcpy_added": child.parse_memcpy_added(MULTI_LOG)}
    ins = inspect_model(good["shape"])  # supplies the shape-node names ("shape")
    p = summarise_placement(answer, ins)
    assert p is not None
    assert p.nodes_by_provider == {"CUDAExecutionProvider": 3, "CPUExecutionProvider": 3}
    assert p.memcpy_nodes == 2
    assert p.gpu_share == 0.25  # 1 of 4 real nodes
    kinds = {n["name"]: n["kind"] for n in p.cpu_nodes}
    assert kinds == {"X_quant": "quantized", "matmul_integer": "quantized", "shape": "shape"}
    found = mf.placement_findings(p, answer, ins, cuda_graph=False)
    assert [f.id for f in found] == ["model-quantized-ops-on-cpu", "model-shape-ops-on-cpu", "model-memcpy-nodes"]
    assert "MatMulInteger x1" in found[0].detail
    assert "QDQ" in (found[0].fix or "")


def test_all_on_cuda_is_full_share() -> None:
    log = f"{_PREFIX}  All nodes placed on [CUDAExecutionProvider]. Number of nodes: 3"
    answer = {"providers": ["CUDAExecutionProvider", "CPUExecutionProvider"], "cuda_ep_active": True,
              "assignment_source": ["ep-graph-assignment-info", "verbose-log"],
              "assignment": [{"provider": "CUDAExecutionProvider", "op_type": op, "name": op.lower(), "domain": ""}
                             for op in ("MatMul", "Add", "Relu")],
              "placements": ort_placement.parse_placements(log), "memcpy_added": []}
    p = summarise_placement(answer, None)
    assert p is not None
    assert p.gpu_share == 1.0
    assert p.op_types_by_provider == {"CUDAExecutionProvider": {"Add": 1, "MatMul": 1, "Relu": 1}}
    assert mf.placement_findings(p, answer, None, cuda_graph=False) == []


def test_cuda_graph_refusal_is_quoted() -> None:
    answer = {"providers": ["CUDAExecutionProvider"], "cuda_ep_active": True, "placements": None,
              "assignment": [{"provider": "CUDAExecutionProvider", "op_type": "Loop", "name": "l", "domain": ""}],
              "cuda_graph": {"tried": True, "ok": False, "error": "Fail: ... as the model has control flow nodes"}}
    p = summarise_placement(answer, None)
    assert p is not None
    found = mf.placement_findings(p, answer, None, cuda_graph=True)
    assert [f.id for f in found] == ["model-cuda-graph-refused"]
    assert "control flow" in found[0].detail
    assert "without control flow" in (found[0].fix or "")


def test_cuda_graph_refusal_for_cpu_nodes_keeps_the_catalog_fix() -> None:
    answer = {"providers": ["CUDAExecutionProvider"], "cuda_ep_active": True, "placements": None,
              "assignment": [{"provider": "CUDAExecutionProvider", "op_type": "Relu", "name": "r", "domain": ""}],
              "cuda_graph": {"tried": True, "ok": False,
                             "error": "Fail: ... as all the graph nodes have not been partitioned to the CUDA EP"}}
    p = summarise_placement(answer, None)
    assert p is not None
    (found,) = mf.placement_findings(p, answer, None, cuda_graph=True)
    assert found.fix is not None
    assert "Move the nodes" in found.fix


def test_model_too_large_for_device(good: dict[str, Path]) -> None:
    ins = inspect_model(good["float"])
    tiny = DriverInfo(available=True, devices=(Device(index=0, name="NVIDIA Tiny", memory_total_mib=1,
                                                      memory_free_mib=0),))
    (f,) = mf.memory_findings(ins, tiny, 0)
    assert f.id == "model-too-large-for-device"
    assert "NVIDIA Tiny" in f.detail
    big = DriverInfo(available=True, devices=(Device(index=0, name="H200", memory_free_mib=140000),))
    assert mf.memory_findings(ins, big, 0) == []
    assert mf.memory_findings(ins, DriverInfo(available=False), 0) == []


def test_session_error_classification() -> None:
    ir = mf.session_error_findings("Fail: Unsupported model IR version: 99, max supported IR version: 13", None, "1.31.1")
    assert ir[0].id == "model-opset-unsupported"
    assert "IR version 99" in ir[0].detail
    kernel = mf.session_error_findings(
        "NotImplemented: Could not find an implementation for Foo(1) node with name 'x'", None, None)
    assert kernel[0].id == "model-load-failed"
    assert mf.session_error_findings("Something else", None, None)[0].id == "model-load-failed"


def test_catalog_covers_every_id() -> None:
    assert {e.id for e in mf.CATALOG} >= mf.INPUT_ERROR_IDS
    assert len({e.id for e in mf.CATALOG}) == len(mf.CATALOG)

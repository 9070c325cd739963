"""``check --model`` on the real exported fixtures: shape-only nodes, valid inputs, the CPU-EP reference,
output comparison, IO binding, TensorRT advice.

This machine has no GPU. The child runs the real onnxruntime 1.31.1 CPU wheel (tests/support/testenvs.py)
with the execution provider under test set to the CPU EP (``check_model(..., ep="CPUExecutionProvider")``):
the whole proof runs end to end, the CPU EP's outputs compared with a second CPU EP session's. What the CUDA
EP places on the CPU is given to the summariser as data, in the shape the child produces, from onnxruntime's
own fallback rule applied to the file (tests/support/ort_fallback.py); scripts/model_check_gpu.sh checks the
same on the GPU machine against onnxruntime's log.
"""

from __future__ import annotations

import json
import os
import stat
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ortdoctor.core.ep_names import CUDA_EP
from ortdoctor.core.exitcodes import FAIL, OK
from ortdoctor.diagnose import model as mf
from ortdoctor.doctor.model import check_model
from ortdoctor.formats.npy import NpyError, read_npy_header
from ortdoctor.prove.model_check import child
from ortdoctor.prove.model_check.compare import TF32_BOUND, compare_outputs, summarise, tolerance_for
from ortdoctor.prove.model_check.given_inputs import parse_input_files
from ortdoctor.prove.model_check.inspect import ModelInspection, inspect_model
from ortdoctor.prove.model_check.op_cost import costs, op_class
from ortdoctor.prove.model_check.placement import summarise_placement
from ortdoctor.prove.model_check.runner import RESULT_MARKER, STAGE_MARKER, last_stage, parse_result
from ortdoctor.prove.model_check.shape_subgraph import SHAPE_SLOTS
from ortdoctor.prove.ort_placement import parse_placements
from ortdoctor.report.model import ModelReport
from ortdoctor.report.model_check import render_model
from tests.support import testenvs
from tests.support.ort_fallback import cpu_preferred_nodes
from tests.test_shape_subgraph import OPTIMUM_BERT_SHAPE_NODES

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "models"
EXPECTED: dict[str, Any] = json.loads((DATA / "expected.json").read_text(encoding="utf-8"))
MODELS = sorted(EXPECTED["models"])
CPU = "CPUExecutionProvider"


def model_path(name: str) -> Path:
    return DATA / str(EXPECTED["models"][name]["file"])


def cpu_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(testenvs.ensure("ort-cpu"))}


def ids(report: ModelReport) -> list[str]:
    return [f.id for f in report.findings]


def problems(report: ModelReport) -> list[str]:
    return [f"{f.id}: {f.detail}" for f in report.findings if f.severity in ("error", "warning")]


# --------------------------------------------------------------------------------------------------
# Every fixture, no flags: valid inputs, the reference run, every output compared
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def proved() -> dict[str, ModelReport]:
    return {name: check_model(model_path(name), env=cpu_env(), ep=CPU) for name in MODELS}


@pytest.mark.realwheels
@pytest.mark.parametrize("name", MODELS)
def test_fixture_runs_with_valid_inputs_and_no_flags(proved: dict[str, ModelReport], name: str) -> None:
    report = proved[name]
    assert problems(report) == []
    assert report.exit_code == OK
    run = report.run
    assert run is not None
    assert run["problems"] == []
    assert run["inputs_valid"] is True
    assert run["ep"]["ok"]
    assert run["cpu"]["ok"]
    assert run["ep"]["provider"] == CPU
    assert all(i["source"] == "synthetic" for i in run["inputs"].values())
    outputs = [o["name"] for o in EXPECTED["models"][name]["outputs"]]
    assert [o["output"] for o in run["outputs"]] == outputs  # every output, in order
    assert all(o["compared"] and o["agree"] for o in run["outputs"])
    assert run["agree"] is True
    assert run["speedup"] is not None
    assert run["speedup"] > 0
    assert run["ep"]["runs"] >= 0
    text = render_model(report)
    assert "and its outputs agree with the CPU EP's" in text


@pytest.mark.realwheels
@pytest.mark.parametrize("name", MODELS)
def test_json_lists_shape_only_nodes(proved: dict[str, ModelReport], name: str) -> None:
    js = proved[name].to_json()
    ins = inspect_model(model_path(name))
    assert js["shape_only_nodes"] == list(ins.shape_nodes)
    assert js["ep"] == CPU
    assert js["test_inputs"]["inputs"][0]["source"] == "synthetic"
    assert json.loads(json.dumps(js)) == js  # plain JSON


def test_shape_only_nodes_are_static(tmp_path: Path) -> None:
    """No onnxruntime at all (the child cannot start): the JSON still names the shape-only nodes."""
    report = check_model(model_path("bert_optimum"), python=str(tmp_path / "no-python"))
    js = report.to_json()
    assert "model-check-failed" in ids(report)
    assert set(OPTIMUM_BERT_SHAPE_NODES) <= set(js["shape_only_nodes"])
    assert js["tensorrt"]["provider_options"]["trt_profile_opt_shapes"] == (
        "input_ids:1x16,attention_mask:1x16,token_type_ids:1x16")
    assert [i["name"] for i in js["client"]["inputs_on_device"]] == ["input_ids", "attention_mask", "token_type_ids"]


def test_shape_only_count_leaves_constants_out() -> None:
    ins = inspect_model(model_path("bert_optimum"))
    graph = ins.graph
    assert graph is not None
    ops = Counter(n.op_type for n in graph.nodes if n.name in set(ins.shape_nodes))
    assert "Constant" not in ops
    assert sum(ops.values()) == len(ins.shape_nodes) == 59


@pytest.mark.realwheels
def test_optimum_bert_text_on_the_cpu_seam(proved: dict[str, ModelReport]) -> None:
    text = render_model(proved["bert_optimum"])
    assert "213 nodes; 59 only compute shapes" in text
    assert "session     onnxruntime 1.31.1 on CPUExecutionProvider (under test: the CPU EP)" in text
    assert "input_ids int64[1x16] random in [0, 75) (indexes bert.embeddings.word_embeddings.weight (75 rows))" in text
    assert "attention_mask int64[1x16] ones" in text
    assert "✔ logits float32[1x3]: largest error 0" in text
    assert "trt_profile_max_shapes   input_ids:8x64,attention_mask:8x64,token_type_ids:8x64" in text
    assert "model-cpu-compute-ops" not in text


# --------------------------------------------------------------------------------------------------
# The default EP (CUDA) where there is none: the inputs are still validated on the CPU EP
# --------------------------------------------------------------------------------------------------
@pytest.mark.realwheels
def test_cuda_ep_missing_still_validates_inputs() -> None:
    report = check_model(model_path("gpt2_with_past"), env=cpu_env())
    assert ids(report)[0] == "model-not-on-gpu"
    run = report.run
    assert run is not None
    assert run["inputs_valid"] is True
    assert run["cpu"]["ok"]
    assert "was not created" in run["ep"]["skipped"]
    assert run["agree"] is None
    assert "model-inputs-invalid" not in ids(report)
    assert "model-run-failed" not in ids(report)
    js = report.to_json()
    assert js["shape_only_nodes"]
    assert js["tensorrt"]["provider_options"]["trt_profile_min_shapes"].startswith("input_ids:1x1,past_key_values.0.key:1x2x0x16")
    text = render_model(report)
    assert "CUDA EP — (not run)" in text
    assert report.client is None  # no IO-binding advice for a device no session got
    assert "must be CUDA tensors on cuda:0" not in text


# --------------------------------------------------------------------------------------------------
# --input NAME=file.npy, invalid inputs, IO binding
# --------------------------------------------------------------------------------------------------
def _save(tmp_path: Path, name: str, array: Any) -> str:
    path = tmp_path / f"{name}.npy"
    np.save(path, array)
    return str(path)


@pytest.mark.realwheels
def test_given_input_fixes_the_other_inputs(tmp_path: Path) -> None:
    ids_file = _save(tmp_path, "ids", np.arange(32, dtype=np.int64).reshape(1, 32) % 75)
    report = check_model(model_path("bert_optimum"), input_files=[f"input_ids={ids_file}"], env=cpu_env(), ep=CPU)
    run = report.run
    assert run is not None
    assert run["inputs"]["input_ids"] == {"shape": [1, 32], "dtype": "int64", "source": ids_file}
    assert run["inputs"]["attention_mask"]["shape"] == [1, 32]  # the file's size bound the symbols
    assert run["agree"] is True
    assert report.test_inputs is not None
    assert [i["source"] for i in report.test_inputs["inputs"]] == [ids_file, "synthetic", "synthetic"]
    assert f"input_ids int64[1x32] from {ids_file}" in render_model(report)


@pytest.mark.realwheels
def test_ids_outside_the_table_are_not_evidence(tmp_path: Path) -> None:
    """What random ids used to do: the CPU EP refuses them, so the EP under test is not run at all."""
    bad = _save(tmp_path, "ids", np.full((1, 8), 75, dtype=np.int64))
    report = check_model(model_path("bert_optimum"), input_files={"input_ids": bad}, env=cpu_env(), ep=CPU)
    run = report.run
    assert run is not None
    assert run["inputs_valid"] is False
    assert run["agree"] is None
    assert run["ep"]["ok"] is False
    assert "prove nothing" in run["ep"]["skipped"]
    assert "runs" not in run["ep"]
    (f,) = [f for f in report.findings if f.id == "model-inputs-invalid"]
    assert "indices element out of data bounds" in f.detail
    assert "the given inputs" in f.detail
    assert "out of range" in f.detail
    assert "--input" in (f.fix or "")


@pytest.mark.realwheels
def test_wrong_dtype_file_is_not_run(tmp_path: Path) -> None:
    ids32 = _save(tmp_path, "ids", np.zeros((1, 8), dtype=np.int32))
    report = check_model(model_path("bert_optimum"), input_files={"input_ids": ids32}, env=cpu_env(), ep=CPU)
    (f,) = [f for f in report.findings if f.id == "model-run-failed"]
    assert "the file holds int32, the model's input is int64" in f.detail


def test_unknown_input_names_are_reported_without_a_child(tmp_path: Path) -> None:
    ids_file = _save(tmp_path, "x", np.zeros((1, 8), dtype=np.int64))
    report = check_model(model_path("bert_optimum"), input_files={"nope": ids_file}, input_shapes=["zz=1x2"],
                         python=str(tmp_path / "no-python"))
    inputs = "(its inputs: input_ids, attention_mask, token_type_ids)"
    assert report.run == {"problems": [f"--input-shape names 'zz', which is not an input of the model {inputs}",
                                       f"--input names 'nope', which is not an input of the model {inputs}"]}
    assert ids(report) == ["model-check-failed", "model-run-failed"]


@pytest.mark.realwheels
def test_unknown_input_names_become_a_finding(tmp_path: Path) -> None:
    ids_file = _save(tmp_path, "x", np.zeros((1, 8), dtype=np.int64))
    report = check_model(model_path("bert_optimum"), input_files={"nope": ids_file}, env=cpu_env(), ep=CPU)
    (f,) = [f for f in report.findings if f.id == "model-run-failed"]
    assert "--input names 'nope', which is not an input of the model" in f.detail


@pytest.mark.realwheels
@pytest.mark.parametrize("name", ["bert_optimum", "gpt2_with_past"])
def test_iobinding_the_way_clients_bind(name: str) -> None:
    report = check_model(model_path(name), iobinding=True, env=cpu_env(), ep=CPU)
    run = report.run
    assert run is not None
    assert run["iobinding"] == {"used": True, "device": "cpu:0"}
    assert run["agree"] is True
    assert "CPU EP with IO binding" in render_model(report)


def test_parse_input_files(tmp_path: Path) -> None:
    good = _save(tmp_path, "ids", np.zeros((2, 3), dtype=np.int64))
    assert parse_input_files([f"ids={good}"]) == {"ids": good}
    (tmp_path / "text.npy").write_text("not numpy")
    for bad, message in ((["ids"], "expected NAME=FILE.npy"), ([f"ids={good}", f"ids={good}"], "twice"),
                         ([f"ids={tmp_path / 'missing.npy'}"], "No such file"),
                         ([f"ids={tmp_path / 'text.npy'}"], "not a .npy file")):
        with pytest.raises(ValueError, match=message):
            parse_input_files(bad)


@pytest.mark.parametrize("array", [np.zeros((2, 3), np.int64), np.ones((1,), np.float16), np.zeros((), np.bool_),
                                   np.zeros((4, 0, 2), np.float32), np.asfortranarray(np.zeros((2, 3), np.uint8))])
def test_npy_header_agrees_with_numpy(tmp_path: Path, array: Any) -> None:
    path = tmp_path / "a.npy"
    np.save(path, array)
    header = read_npy_header(path)
    assert header.dtype == array.dtype.name
    assert header.shape == array.shape
    assert header.fortran_order == (array.flags.f_contiguous and not array.flags.c_contiguous)
    data = path.read_bytes()  # the same header in the version 2 layout (a 4-byte length)
    length = int.from_bytes(data[8:10], "little")
    (tmp_path / "v2.npy").write_bytes(data[:6] + b"\x02\x00" + length.to_bytes(4, "little") + data[10:])
    assert read_npy_header(tmp_path / "v2.npy") == header
    (tmp_path / "cut.npy").write_bytes(data[:20])
    with pytest.raises(NpyError):
        read_npy_header(tmp_path / "cut.npy")


# --------------------------------------------------------------------------------------------------
# The CUDA EP's placement (as data): shape-only CPU nodes are a note, compute is ranked
# --------------------------------------------------------------------------------------------------
_PREFIX = "2026-01-01 00:00:00.0 [V:onnxruntime:, session_state.cc:1580 VerifyEachNodeIsAssignedToAnEp]"
_MEMCPY = "2026-01-01 00:00:00.0 [I:onnxruntime:, transformer_memcpy.cc:393 AddCopyNode]"


def cuda_answer(ins: ModelInspection, extra_cpu: tuple[str, ...] = ()) -> dict[str, Any]:
    """The child's answer for a CUDA session that places the fallback rule's nodes (and ``extra_cpu``) on
    the CPU, written as onnxruntime's verbose log and parsed by the child's own parsers."""
    graph = ins.graph
    assert graph is not None
    cpu = cpu_preferred_nodes(graph) | {n.index for n in graph.nodes if n.name in extra_cpu}
    cpu_outputs = {o for i in cpu for o in graph.nodes[i].outputs}
    copies = []
    for node in graph.nodes:
        if node.index in cpu or node.op_type == "Constant":
            continue
        for slot, name in enumerate(node.inputs):
            if name in cpu_outputs and slot not in SHAPE_SLOTS.get(node.op_type, ()) and name not in copies:
                copies.append(name)
    gpu_nodes = [n for n in graph.nodes if n.index not in cpu and n.op_type != "Constant"]
    lines = [f"{_MEMCPY} Add MemcpyFromHost after {t} for {CUDA_EP}" for t in copies]
    lines += [f"{_PREFIX} Node placements",
              f"{_PREFIX}  Node(s) placed on [{CUDA_EP}]. Number of nodes: {len(gpu_nodes) + len(copies)}"]
    lines += [f"   {n.op_type} ({n.name})" for n in gpu_nodes]
    lines += [f"   MemcpyFromHost (Memcpy{'_token_' + str(i) if i else ''})" for i in range(len(copies))]
    lines.append(f"{_PREFIX}  Node(s) placed on [{CPU}]. Number of nodes: {len(cpu)}")
    lines += [f"   {graph.nodes[i].op_type} ({graph.nodes[i].name})" for i in sorted(cpu)]
    log = "\n".join(lines)
    return {"model": ins.path, "ep": CUDA_EP, "providers": [CUDA_EP, CPU], "ep_active": True,
            "cuda_ep_active": True, "assignment_source": ["verbose-log"], "assignment": None,
            "placements": parse_placements(log), "memcpy_added": child.parse_memcpy_added(log)}


@pytest.mark.parametrize("name", MODELS)
def test_fallback_rule_stays_inside_the_shape_subgraphs(name: str) -> None:
    ins = inspect_model(model_path(name))
    graph = ins.graph
    assert graph is not None
    moved = {graph.nodes[i].name for i in cpu_preferred_nodes(graph)}
    assert moved <= set(ins.shape_nodes)


@pytest.mark.parametrize("name", ["bert_optimum", "bert_dynamo", "gpt2_with_past"])
def test_shape_nodes_on_the_cpu_are_a_note(name: str) -> None:
    ins = inspect_model(model_path(name))
    answer = cuda_answer(ins)
    p = summarise_placement(answer, ins)
    assert p is not None
    assert p.cpu_nodes
    assert all(n["kind"] == "shape" for n in p.cpu_nodes)
    found = mf.placement_findings(p, answer, ins, cuda_graph=False)
    assert "model-cpu-compute-ops" not in [f.id for f in found]
    assert all(f.severity == "info" for f in found)
    note = next(f for f in found if f.id == "model-shape-ops-on-cpu")
    assert f"keeps {len(p.cpu_nodes)} node(s)" in note.detail
    if p.memcpy_nodes:
        copies = next(f for f in found if f.id == "model-memcpy-nodes")
        assert p.memcpy_causes == {"shape": p.memcpy_nodes}
        assert "by design" in copies.title
        assert copies.fix is None


def test_optimum_bert_issue_op_types_are_shape_only() -> None:
    """The op types of the false warning seen on the H200 (Gather, Unsqueeze, Concat, Sqrt, Cast, Div,
    Slice, Equal, Reshape, Where): placed on the CPU, they give a note, never a warning."""
    ins = inspect_model(model_path("bert_optimum"))
    answer = cuda_answer(ins, extra_cpu=("/bert/Equal", "/bert/Where", "/bert/ConstantOfShape"))
    p = summarise_placement(answer, ins)
    assert p is not None
    ops = Counter(n["op_type"] for n in p.cpu_nodes)
    for op in ("Gather", "Unsqueeze", "Concat", "Sqrt", "Cast", "Div", "Slice", "Equal", "Reshape", "Where"):
        assert ops[op] > 0, op
    found = mf.placement_findings(p, answer, ins, cuda_graph=False)
    assert [f.id for f in found] == ["model-shape-ops-on-cpu", "model-memcpy-nodes"]
    report = ModelReport(path=ins.path, inspection=ins, findings=tuple(found), ran=True, providers=(CUDA_EP, CPU),
                         cuda_ep_active=True, placement=p)
    text = render_model(report)
    assert "✔ all compute runs on the CUDA EP" in text
    assert "model-shape-ops-on-cpu" in text


def test_compute_on_the_cpu_is_ranked_by_cost() -> None:
    ins = inspect_model(model_path("bert_optimum"))
    graph = ins.graph
    assert graph is not None
    by_op = {n.op_type: n.name for n in reversed(graph.nodes)}  # the first of each op type
    extra = (by_op["Add"], by_op["Transpose"], "/bert/encoder/layer.1/intermediate/dense/MatMul",
             by_op["Softmax"], "/bert/encoder/layer.0/attention/self/query/MatMul")
    answer = cuda_answer(ins, extra_cpu=extra)
    p = summarise_placement(answer, ins)
    assert p is not None
    found = mf.placement_findings(p, answer, ins, cuda_graph=False)
    (f,) = [f for f in found if f.id == "model-cpu-compute-ops"]
    assert f.severity == "warning"
    order = [f.detail.index(name) for name in (
        "/bert/encoder/layer.1/intermediate/dense/MatMul",  # 32x64 weights
        "/bert/encoder/layer.0/attention/self/query/MatMul",  # 32x32 weights
        by_op["Softmax"], by_op["Add"], by_op["Transpose"])]
    assert order == sorted(order)
    assert "reads 2.0 K weights" in f.detail
    assert "ranked by op class" in f.detail
    assert p.memcpy_causes.get("compute")
    copies = next(f for f in found if f.id == "model-memcpy-nodes")
    assert "move activations" in copies.detail
    assert copies.fix  # the catalog's: remove the CPU-placed compute nodes


def test_data_movement_alone_is_a_note() -> None:
    ins = inspect_model(model_path("bert_optimum"))
    graph = ins.graph
    assert graph is not None
    transpose = next(n.name for n in graph.nodes if n.op_type == "Transpose")
    answer = cuda_answer(ins, extra_cpu=(transpose,))
    p = summarise_placement(answer, ins)
    assert p is not None
    (f,) = [f for f in mf.placement_findings(p, answer, ins, cuda_graph=False) if f.id == "model-cpu-compute-ops"]
    assert f.severity == "info"
    assert f.title == "nodes that only move data run on the CPU"


def test_cost_classes() -> None:
    assert [op_class(o) for o in ("MatMul", "Attention", "LayerNormalization", "Erf", "Reshape", "MyCustomOp")] == [
        "matmul", "attention", "normalisation", "elementwise", "data", "other"]
    ranked = costs([{"op_type": "Add", "name": "a"}, {"op_type": "Conv", "name": "c"},
                    {"op_type": "Softmax", "name": "s"}, {"op_type": "Conv", "name": "fused"}], None)
    assert [c.name for c in ranked] == ["c", "fused", "s", "a"]


# --------------------------------------------------------------------------------------------------
# The comparison and its tolerances (pure, with numpy here)
# --------------------------------------------------------------------------------------------------
def test_tolerances() -> None:
    tf32 = tolerance_for("float32", ep=CUDA_EP, tf32=None)
    assert tf32.bound == TF32_BOUND
    assert "TF32" in tf32.basis
    assert tolerance_for("float32", ep=CUDA_EP, tf32=False).bound == 1e-4
    assert tolerance_for("float32", ep=CUDA_EP, tf32=True, compute_types=["float16"]).bound == 2e-2
    assert tolerance_for("float16", ep=CUDA_EP, tf32=False).bound == 2e-2
    assert tolerance_for("int64", ep=CUDA_EP, tf32=True).bound == 0.0
    assert tolerance_for("float32", ep=CPU, tf32=None).bound == 1e-5
    quantized = tolerance_for("float32", ep=CUDA_EP, tf32=True, compute_types=["float32", "int8"])
    assert quantized.bound == 5e-2
    assert "quantization step" in quantized.basis


def test_compare_outputs() -> None:
    ref = np.array([[1.0, -2.0], [0.5, 4.0]], np.float32)
    close = ref + np.float32(1e-3)  # 2.5e-4 of the largest value: inside TF32's bound, outside float32's
    names = ["logits", "ids", "seq"]
    records = compare_outputs(names, [close, np.array([1, 2]), [ref]], [ref, np.array([1, 3]), [ref]],
                              ep=CUDA_EP, tf32=True)
    logits, ids_, seq = records
    assert logits["agree"] is True
    assert logits["max_abs_error"] == pytest.approx(1e-3, rel=1e-3)
    assert logits["relative_error"] == pytest.approx(2.5e-4, rel=1e-2)
    assert logits["reference_max_abs"] == 4.0
    assert ids_["agree"] is False
    assert ids_["mismatched"] == 1
    assert seq["compared"] is False
    assert summarise(records) is False
    strict = compare_outputs(["logits"], [close], [ref], ep=CUDA_EP, tf32=False)
    assert strict[0]["agree"] is False
    nan = ref.copy()
    nan[0, 0] = np.nan
    (one_sided,) = compare_outputs(["x"], [nan], [ref], ep=CUDA_EP, tf32=True)
    assert one_sided["agree"] is False
    assert one_sided["nonfinite_mismatches"] == 1
    (both,) = compare_outputs(["x"], [nan], [nan], ep=CUDA_EP, tf32=True)
    assert both["agree"] is True
    inf = ref.copy()
    inf[0, 0] = np.inf
    minus = ref.copy()
    minus[0, 0] = -np.inf
    (signs,) = compare_outputs(["x"], [inf], [minus], ep=CUDA_EP, tf32=True)  # no RuntimeWarning for inf - inf
    assert signs["nonfinite_mismatches"] == 1
    (shape,) = compare_outputs(["x"], [ref[:1]], [ref], ep=CUDA_EP, tf32=True)
    assert shape["agree"] is False
    assert "shapes differ" in shape["reason"]


def test_run_findings() -> None:
    base = {"problems": [], "inputs": {"x": {"source": "synthetic"}}, "cpu": {"ok": True}, "inputs_valid": True}
    failed = mf.run_findings({**base, "ep": {"ok": False, "error": "RuntimeError: CUDA failure 700: an illegal "
                                             "memory access was encountered"}, "iobinding": {"used": True}})
    assert [(f.id, f.severity) for f in failed] == [("model-run-failed", "error")]
    assert "with IO binding on inputs the CPU EP accepted" in failed[0].detail
    differ = mf.run_findings({**base, "ep": {"ok": True}, "outputs": [
        {"output": "logits", "compared": True, "agree": False, "dtype": "float32", "max_abs_error": 0.5,
         "relative_error": 0.1, "reference_max_abs": 5.0, "tolerance": {"bound": 1e-2, "basis": "TF32"}}]})
    assert [f.id for f in differ] == ["model-outputs-differ"]
    assert "largest error 0.5 = 0.1 of its largest value 5, bound 0.01 (TF32)" in differ[0].detail
    assert mf.run_findings({**base, "ep": {"ok": True}, "outputs": [], "agree": None}) == []


# --------------------------------------------------------------------------------------------------
# A test run that hangs or crashes: the placement stays, the finding names the step
# --------------------------------------------------------------------------------------------------
def _fake_child(tmp_path: Path, answer: dict[str, Any], stage: str, then: str) -> str:
    (tmp_path / "answer.json").write_text(RESULT_MARKER + json.dumps(answer) + "\n" + STAGE_MARKER + "cpu\n"
                                          + STAGE_MARKER + stage + "\n")
    script = tmp_path / "fake-python"
    script.write_text(f"#!/bin/sh\ncat {tmp_path / 'answer.json'}\n{then}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_hang_in_the_ep_run_keeps_the_placement(tmp_path: Path) -> None:
    ins = inspect_model(model_path("bert_optimum"))
    answer = {**cuda_answer(ins), "stage": "run", "partial": True, "ort_version": "1.31.1"}
    report = check_model(ins.path, timeout=2, python=_fake_child(tmp_path, answer, "ep", "exec sleep 30"))
    assert report.placement is not None
    assert report.placement.cpu_nodes
    (f,) = [f for f in report.findings if f.id == "model-run-failed"]
    assert f.severity == "error"
    assert "The test run on the CUDA EP did not finish: it took longer than the 2 s timeout" in f.detail
    assert report.exit_code == FAIL


def test_crash_in_the_reference_run(tmp_path: Path) -> None:
    ins = inspect_model(model_path("cnn"))
    answer = {**cuda_answer(ins), "stage": "run", "partial": True}
    report = check_model(ins.path, python=_fake_child(tmp_path, answer, "cpu", "kill -SEGV $$"))
    (f,) = [f for f in report.findings if f.id == "model-run-failed"]
    assert f.severity == "warning"
    assert "on the CPU EP (the reference) did not finish: the process died of SIGSEGV" in f.detail


def test_runner_keeps_the_last_complete_answer() -> None:
    out = (f"{RESULT_MARKER}{json.dumps({'stage': 'run', 'partial': True})}\n{STAGE_MARKER}ep\n"
           f'{RESULT_MARKER}{{"stage": "do')
    assert parse_result(out) == {"stage": "run", "partial": True}
    assert last_stage(out) == "ep"
    assert last_stage("nothing") is None

"""Shape-only nodes, embedding tables and synthetic inputs on real exported models (tests/data/models).

The fixtures come from real exporters (scripts/make_model_fixtures.py; tests/data/models/README.md says
which, with versions). ``expected.json`` was written from the ``onnx`` package's own parse of each file,
so it is an independent oracle for ortdoctor's protobuf reader and for the embedding-table tracing.
onnxruntime runs in a child process (its CPU build, from tests/support/testenvs.py), as everywhere else.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto, helper

from ortdoctor.prove.model_check import shape_subgraph as ss
from ortdoctor.prove.model_check.inspect import ModelGraph, ModelInspection, inspect_model
from ortdoctor.prove.model_check.shape_limits import shape_problems
from tests.support import testenvs

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "models"
EXPECTED: dict[str, Any] = json.loads((DATA / "expected.json").read_text(encoding="utf-8"))
MODELS = sorted(EXPECTED["models"])

# Ops that do a model's real work: none of them may ever be called a shape computation.
COMPUTE_OPS = frozenset({"MatMul", "Gemm", "Softmax", "LayerNormalization", "Erf", "Tanh", "Pow", "Conv",
                         "BatchNormalization", "Relu", "MaxPool", "ReduceMean", "Transpose", "Split",
                         "MatMulInteger", "DynamicQuantizeLinear", "QuantizeLinear", "DequantizeLinear",
                         "IsNaN", "And", "LessOrEqual", "Range"})


@pytest.fixture(scope="module")
def inspected() -> dict[str, ModelInspection]:
    return {name: inspect_model(DATA / EXPECTED["models"][name]["file"]) for name in MODELS}


def graph_of(inspected: dict[str, ModelInspection], name: str) -> ModelGraph:
    graph = inspected[name].graph
    assert graph is not None
    return graph


# --------------------------------------------------------------------------------------------------
# The fixtures and the reader
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", MODELS)
def test_fixture_is_the_recorded_file(name: str) -> None:
    record = EXPECTED["models"][name]
    data = (DATA / record["file"]).read_bytes()
    assert len(data) == record["bytes"]
    assert hashlib.sha256(data).hexdigest() == record["sha256"]
    onnx.checker.check_model(onnx.load_from_string(data))


def test_fixtures_stay_small() -> None:
    total = sum(p.stat().st_size for p in DATA.iterdir())
    assert total < 2 * 1024 * 1024


@pytest.mark.parametrize("name", MODELS)
def test_reader_agrees_with_onnx(inspected: dict[str, ModelInspection], name: str) -> None:
    record = EXPECTED["models"][name]
    ins = inspected[name]
    graph = graph_of(inspected, name)
    assert ins.ok
    assert [{"name": i.name, "dtype": i.dtype, "dims": list(i.shape or ())} for i in ins.inputs] == record["inputs"]
    assert [{"name": o.name, "dtype": o.dtype, "dims": list(o.shape or ())} for o in graph.outputs] == record["outputs"]
    assert ins.node_count == len(graph.nodes) == record["node_count"]
    assert dict(Counter(n.op_type for n in graph.nodes)) == record["op_types"]
    assert [n.index for n in graph.nodes] == list(range(len(graph.nodes)))


@pytest.mark.parametrize("name", MODELS)
def test_embedding_tables_agree_with_onnx(inspected: dict[str, ModelInspection], name: str) -> None:
    found = ss.embedding_tables(graph_of(inspected, name))
    got = {k: [{"gather": t.node, "table": t.table, "rows": t.rows} for t in v] for k, v in found.items()}
    assert got == EXPECTED["models"][name]["embedding_rows"]


def test_token_ids_of_gpt2_reach_their_table_through_a_reshape(inspected: dict[str, ModelInspection]) -> None:
    tables = ss.embedding_tables(graph_of(inspected, "gpt2_with_past"))
    assert [(t.table, t.rows, t.through) for t in tables["input_ids"]] == [("transformer.wte.weight", 320, ("Reshape",))]
    assert [(t.table, t.rows) for t in tables["position_ids"]] == [("transformer.wpe.weight", 64)]


# --------------------------------------------------------------------------------------------------
# Shape-only nodes
# --------------------------------------------------------------------------------------------------
# The Optimum (TorchScript exporter) BERT: the op types of the false "model-cpu-compute-ops" warning seen
# on the H200 (Gather, Unsqueeze, Concat, Sqrt, Cast, Div, Slice, Equal, Reshape, Where), node by node.
_LAYER_SHAPE_NODES = [
    "Shape", "Gather", "Shape_1", "Gather_1", "Unsqueeze", "Unsqueeze_1", "Unsqueeze_2", "Concat", "Concat_1",
    "Concat_2", "Shape_2", "Slice", "Cast", "Sqrt", "Div", "Cast_1", "Sqrt_1", "Sqrt_2", "Unsqueeze_3",
    "Unsqueeze_4", "Concat_3",
]
OPTIMUM_BERT_SHAPE_NODES = [
    "/bert/Shape", "/bert/Gather", "/bert/Shape_1", "/bert/Gather_1", "/bert/Shape_2", "/bert/Gather_2",
    "/bert/Unsqueeze_2", "/bert/Unsqueeze_3", "/bert/Unsqueeze_4", "/bert/Concat", "/bert/Reshape",
    "/bert/Shape_3", "/bert/ConstantOfShape", "/bert/Mul", "/bert/Equal", "/bert/Where",
    "/bert/embeddings/Unsqueeze",
    *[f"/bert/encoder/layer.{i}/attention/self/{n}" for i in (0, 1) for n in _LAYER_SHAPE_NODES],
]
# Look alike (Unsqueeze, Cast, Where, Slice, Reshape) but carry the attention mask, positions or activations.
OPTIMUM_BERT_DATA_NODES = [
    "/bert/Unsqueeze", "/bert/Unsqueeze_1", "/bert/Expand", "/bert/Cast", "/bert/Sub", "/bert/Cast_1",
    "/bert/Cast_2", "/bert/Where_1", "/bert/embeddings/Slice", "/bert/embeddings/word_embeddings/Gather",
    "/bert/embeddings/position_embeddings/Gather", "/bert/pooler/Gather",
    "/bert/encoder/layer.0/attention/self/Reshape", "/bert/encoder/layer.0/attention/self/Mul",
    "/bert/encoder/layer.1/attention/self/Reshape_3",
]


def test_optimum_bert_shape_computations_are_shape_only(inspected: dict[str, ModelInspection]) -> None:
    names = ss.shape_only_names(graph_of(inspected, "bert_optimum"))
    missing = [n for n in OPTIMUM_BERT_SHAPE_NODES if n not in names]
    assert missing == []
    assert [n for n in OPTIMUM_BERT_DATA_NODES if n in names] == []
    ops = Counter(n.op_type for n in ss.shape_only_nodes(graph_of(inspected, "bert_optimum")))
    for op in ("Gather", "Unsqueeze", "Concat", "Sqrt", "Cast", "Div", "Slice", "Equal", "Reshape", "Where"):
        assert ops[op] > 0, op


# Per model, shape-only nodes by op type (Constant nodes left out: onnxruntime folds them away).
SHAPE_ONLY_COUNTS = {
    "bert_optimum": {"Shape": 10, "Gather": 7, "Unsqueeze": 14, "Concat": 9, "Reshape": 1, "ConstantOfShape": 1,
                     "Mul": 1, "Equal": 1, "Where": 1, "Slice": 2, "Cast": 4, "Sqrt": 6, "Div": 2},
    "bert_optimum_int8_dynamic": {"Shape": 10, "Gather": 7, "Unsqueeze": 14, "Concat": 9, "Reshape": 1,
                                  "ConstantOfShape": 1, "Mul": 1, "Equal": 1, "Where": 1, "Slice": 2, "Cast": 4,
                                  "Sqrt": 6, "Div": 2},
    "bert_dynamo": {"Shape": 4, "Concat": 7, "Slice": 6},
    "gpt2_with_past": {"Shape": 50, "Gather": 37, "Unsqueeze": 49, "Concat": 29, "Add": 2, "Cast": 8,
                       "Reshape": 1, "ConstantOfShape": 1, "Mul": 1, "Equal": 1, "Where": 1, "Slice": 11,
                       "Squeeze": 9, "Sqrt": 6, "Div": 2},
    "cnn": {},
    "cnn_qdq": {},
}


@pytest.mark.parametrize("name", MODELS)
def test_shape_only_counts(inspected: dict[str, ModelInspection], name: str) -> None:
    nodes = ss.shape_only_nodes(graph_of(inspected, name))
    assert dict(Counter(n.op_type for n in nodes if n.op_type != "Constant")) == SHAPE_ONLY_COUNTS[name]


@pytest.mark.parametrize("name", MODELS)
def test_no_compute_node_is_shape_only(inspected: dict[str, ModelInspection], name: str) -> None:
    graph = graph_of(inspected, name)
    nodes = ss.shape_only_nodes(graph)
    assert [n.name for n in nodes if n.op_type in COMPUTE_OPS] == []
    # a shape-only node reads the model's data only to take its shape
    data_inputs = {i.name for i in graph.inputs}
    readers = [n.name for n in nodes if n.op_type not in ss.SHAPE_SOURCES
               and data_inputs & set(graph.nodes[n.index].inputs)]
    assert readers == []
    large = {k for k, v in graph.initializers.items() if (v.elements or 0) > ss.SMALL_ELEMENTS}
    assert [n.name for n in nodes if large & set(graph.nodes[n.index].inputs)] == []


def test_dynamo_position_embedding_is_not_a_shape_computation(inspected: dict[str, ModelInspection]) -> None:
    """The dynamo BERT gathers position embeddings with shape-derived indices: a real table lookup."""
    names = ss.shape_only_names(graph_of(inspected, "bert_dynamo"))
    assert "node_embedding_2" not in names
    assert "node_slice_1" not in names  # the position ids slice: data for the Gather, not a shape
    assert {"node_Shape_2", "node_Concat_46", "node_Slice_85"} <= names


def _write(tmp_path: Path, nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
           outputs: list[onnx.ValueInfoProto], inits: list[onnx.TensorProto] | None = None) -> ModelGraph:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=inits or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    ins = inspect_model(path)
    assert ins.graph is not None
    return ins.graph


def test_a_big_node_measured_by_shape_is_not_shape_only(tmp_path: Path) -> None:
    """Shape reads its input's size, not its values: the MatMul before it stays compute."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 4], [0.0] * 16)
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),  # only measured, then reshaped
        helper.make_node("Shape", ["r"], ["s"], name="shape"),
        helper.make_node("Reshape", ["x", "s"], ["x2"], name="reshape"),
        helper.make_node("MatMul", ["x2", "w"], ["y"], name="matmul"),
    ]
    graph = _write(tmp_path, nodes, [x], [y], [w])
    assert [(n.name, n.reason) for n in ss.shape_only_nodes(graph)] == [("shape", "shape-source")]


def test_feeds_shape_rule_and_its_limits(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 6])
    n = helper.make_tensor_value_info("n", TensorProto.INT64, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    big = helper.make_tensor("big", TensorProto.INT64, [200], list(range(200)))
    nodes = [
        helper.make_node("Constant", [], ["c"], name="const", value=helper.make_tensor("v", TensorProto.INT64, [1], [3])),
        helper.make_node("Concat", ["n", "c"], ["shape"], name="concat", axis=0),  # from a graph input
        helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
        helper.make_node("Slice", ["big", "c", "c"], ["sl"], name="big_slice"),  # reads a large table
        helper.make_node("Reshape", ["r", "sl"], ["y"], name="reshape2"),
    ]
    graph = _write(tmp_path, nodes, [x, n], [y], [big])
    got = {n.name: n.reason for n in ss.shape_only_nodes(graph)}
    assert got == {"const": "feeds-shape", "concat": "feeds-shape"}


# --------------------------------------------------------------------------------------------------
# Synthetic inputs
# --------------------------------------------------------------------------------------------------
def test_gpt2_plan_is_the_first_generation_step(inspected: dict[str, ModelInspection]) -> None:
    plan = ss.propose_inputs(graph_of(inspected, "gpt2_with_past"))
    assert plan.ok
    by = {i.name: i for i in plan.inputs}
    assert by["input_ids"].shape == (1, 16)
    assert (by["input_ids"].values, by["input_ids"].low, by["input_ids"].high) == ("randint", 0, 320)
    assert by["past_key_values.0.key"].shape == (1, 2, 0, 16)
    assert by["past_key_values.1.value"].kind == "past_key_values"
    assert (by["attention_mask"].shape, by["attention_mask"].fill) == ((1, 16), 1)
    assert (by["position_ids"].values, by["position_ids"].low) == ("arange", 0)
    assert plan.dims == {"batch_size": 1, "sequence_length": 16, "past_sequence_length": 0}


def test_bert_plan_keeps_ids_inside_their_tables(inspected: dict[str, ModelInspection]) -> None:
    for name in ("bert_optimum", "bert_dynamo", "bert_optimum_int8_dynamic"):
        by = {i.name: i for i in ss.propose_inputs(graph_of(inspected, name)).inputs}
        assert (by["input_ids"].kind, by["input_ids"].high, by["input_ids"].shape) == ("token_ids", 75, (1, 16))
        assert (by["token_type_ids"].kind, by["token_type_ids"].high) == ("token_type_ids", 2)
        assert by["attention_mask"].fill == 1


def test_given_shape_fixes_the_shared_symbols(inspected: dict[str, ModelInspection]) -> None:
    plan = ss.propose_inputs(graph_of(inspected, "gpt2_with_past"), shapes={"input_ids": (2, 5)})
    by = {i.name: i.shape for i in plan.inputs}
    assert by["attention_mask"] == (2, 5)
    assert by["position_ids"] == (2, 5)
    assert by["past_key_values.0.key"] == (2, 2, 0, 16)


def test_past_and_too_long_positions(inspected: dict[str, ModelInspection]) -> None:
    graph = graph_of(inspected, "gpt2_with_past")
    plan = ss.propose_inputs(graph, defaults=ss.Defaults(past=3, sequence=4))
    by = {i.name: i for i in plan.inputs}
    assert by["attention_mask"].shape == (1, 7)  # "past_sequence_length + sequence_length"
    assert by["past_key_values.0.key"].shape == (1, 2, 3, 16)
    assert by["position_ids"].low == 3
    too_long = ss.propose_inputs(graph, defaults=ss.Defaults(sequence=80))
    problems = shape_problems(graph, {i.name: i.shape for i in too_long.inputs})
    assert len(problems) == 1
    assert "64-row position table transformer.wpe.weight" in problems[0]


def test_cnn_plan_is_an_image(inspected: dict[str, ModelInspection]) -> None:
    plan = ss.propose_inputs(graph_of(inspected, "cnn"))
    assert [(i.name, i.shape, i.kind) for i in plan.inputs] == [("pixel_values", (1, 3, 224, 224), "image")]


@pytest.mark.parametrize(("name", "elem", "dims", "shape", "kind"), [
    ("input_values", TensorProto.FLOAT, ["batch_size", "sequence_length"], (1, 16000), "audio"),
    ("input_features", TensorProto.FLOAT, ["batch_size", 80, None], (1, 80, 3000), "audio"),
    ("images", TensorProto.FLOAT, [None, None, None, 3], (1, 224, 224, 3), "image"),
    ("x", TensorProto.FLOAT, [None, None, None, None], (1, 3, 224, 224), "image"),
    ("use_cache_branch", TensorProto.BOOL, [1], (1,), "bool"),
    ("lengths", TensorProto.INT64, ["batch"], (1,), "integer"),
])
def test_heuristics_for_other_inputs(tmp_path: Path, name: str, elem: int, dims: list[Any],
                                     shape: tuple[int, ...], kind: str) -> None:
    inp = helper.make_tensor_value_info(name, elem, dims)
    out = helper.make_tensor_value_info("y", elem, None)
    graph = _write(tmp_path, [helper.make_node("Identity", [name], ["y"])], [inp], [out])
    [item] = ss.propose_inputs(graph).inputs
    assert (item.shape, item.kind) == (shape, kind)


# --------------------------------------------------------------------------------------------------
# onnxruntime (CPU build) runs the synthetic and the recorded inputs
# --------------------------------------------------------------------------------------------------
_RUN = r"""
import json, sys
import numpy as np
import onnxruntime as ort
from ortdoctor.prove.model_check.synthetic_feeds import materialise

request = json.loads(sys.stdin.read())
session = ort.InferenceSession(request["model"], providers=["CPUExecutionProvider"])
names = [o.name for o in session.get_outputs()]
answer = {"version": ort.__version__}
outs = session.run(None, materialise(request["plan"], seed=0))
answer["synthetic"] = {n: {"shape": list(o.shape), "finite": bool(np.isfinite(o).all())} for n, o in zip(names, outs)}
recorded = np.load(request["npz"])
feeds = {k[len("input:"):]: recorded[k] for k in recorded.files if k.startswith("input:")}
outs = session.run(None, feeds)
answer["fixed"] = {n: float(np.abs(o - recorded["output:" + n]).max()) if o.size else 0.0 for n, o in zip(names, outs)}
print(json.dumps(answer))
"""


def _child_env() -> dict[str, str]:
    site = testenvs.ensure("ort-cpu")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}


def _resolve(dim: int | str | None, dims: dict[str, int]) -> int | None:
    if isinstance(dim, int):
        return dim
    if dim is None:
        return None
    return sum(dims[t.strip()] for t in re.split(r"\+", dim))


@pytest.mark.realwheels
@pytest.mark.parametrize("name", MODELS)
def test_cpu_runs_synthetic_and_recorded_inputs(inspected: dict[str, ModelInspection], name: str) -> None:
    record = EXPECTED["models"][name]
    plan = ss.propose_inputs(graph_of(inspected, name))
    assert plan.ok, plan.problems
    request = {"model": str(DATA / record["file"]), "npz": str(DATA / record["fixed_input"]["file"]),
               "plan": plan.to_json()}
    proc = subprocess.run([sys.executable, "-c", _RUN], input=json.dumps(request), capture_output=True,
                          text=True, env=_child_env(), timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    assert answer["version"] == EXPECTED["versions"]["onnxruntime"] == testenvs.ORT_CPU_VERSION
    for out in record["outputs"]:
        got = answer["synthetic"][out["name"]]
        assert got["finite"], out["name"]
        assert got["shape"] == [_resolve(d, plan.dims) for d in out["dims"]]
    # the same onnxruntime on the same input computes what was recorded
    assert max(answer["fixed"].values()) < 1e-5, answer["fixed"]


_BOUNDS = r"""
import json, sys
import numpy as np
import onnxruntime as ort
model, rows = sys.argv[1], int(sys.argv[2])
session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
result = {}
for label, value in (("last_row", rows - 1), ("past_the_end", rows)):
    ids = np.full((1, 8), value, np.int64)
    try:
        session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})
        result[label] = "ok"
    except Exception as exc:
        result[label] = str(exc)
print(json.dumps(result))
"""


@pytest.mark.realwheels
def test_the_table_rows_are_the_real_limit(inspected: dict[str, ModelInspection]) -> None:
    """onnxruntime's own answer to a token id one past the table: what random ids used to cause."""
    [table] = ss.embedding_tables(graph_of(inspected, "bert_optimum"))["input_ids"]
    proc = subprocess.run([sys.executable, "-c", _BOUNDS, str(DATA / "bert_optimum.onnx"), str(table.rows)],
                          capture_output=True, text=True, env=_child_env(), timeout=120, check=True)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["last_row"] == "ok"
    assert "indices element out of data bounds, idx=75 must be within the inclusive range [-75,74]" in result["past_the_end"]


# --------------------------------------------------------------------------------------------------
# The reader's additions and the child-side materialiser
# --------------------------------------------------------------------------------------------------
def test_reader_keeps_axes_and_constant_sizes(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [
        helper.make_node("Constant", [], ["idx"], name="ints", value_ints=[0, 2]),
        helper.make_node("Constant", [], ["one"], name="scalar", value_float=1.0),
        helper.make_node("Gather", ["x", "idx"], ["g"], name="gather", axis=-1),
        helper.make_node("Mul", ["g", "one"], ["y"], name="mul"),
    ]
    graph = _write(tmp_path, nodes, [x], [y])
    by = {n.name: n for n in graph.nodes}
    assert by["gather"].int_attributes == {"axis": -1}
    ints, scalar = by["ints"].constant, by["scalar"].constant
    assert ints is not None
    assert ints.dims == (2,)
    assert scalar is not None
    assert scalar.elements == 1
    assert by["mul"].constant is None


def test_materialise_follows_the_plan() -> None:
    from ortdoctor.prove.model_check.synthetic_feeds import materialise

    plan = {"inputs": [
        {"name": "ids", "dtype": "int64", "shape": [2, 5], "values": "randint", "low": 0, "high": 7},
        {"name": "mask", "dtype": "int64", "shape": [2, 5], "values": "fill", "fill": 1},
        {"name": "pos", "dtype": "int64", "shape": [2, 5], "values": "arange", "low": 3},
        {"name": "past", "dtype": "float32", "shape": [1, 2, 0, 4], "values": "normal"},
        {"name": "wave", "dtype": "float32", "shape": [1, 100], "values": "uniform", "low": -1.0, "high": 1.0},
        {"name": "flag", "dtype": "bool", "shape": [1], "values": "fill", "fill": 0},
    ]}
    feeds = materialise(plan, seed=0)
    assert feeds["ids"].dtype.name == "int64"
    assert 0 <= feeds["ids"].min()
    assert feeds["ids"].max() < 7
    assert feeds["mask"].sum() == 10
    assert feeds["pos"].tolist() == [[3, 4, 5, 6, 7]] * 2
    assert feeds["past"].shape == (1, 2, 0, 4)
    assert -1 <= feeds["wave"].min()
    assert feeds["wave"].max() < 1
    assert feeds["flag"].tolist() == [False]
    again = materialise(plan, seed=0)
    assert (again["ids"] == feeds["ids"]).all()
    with pytest.raises(ValueError, match="no dtype"):
        materialise({"inputs": [{"name": "b", "dtype": "float8e4m3fn", "shape": [1], "values": "normal"}]})

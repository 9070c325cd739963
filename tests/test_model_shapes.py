"""Every shape set ``check --model`` runs or advises can run: the model's own limits, checked up front.

The real exported fixtures (tests/data/models, scripts/make_model_fixtures.py) carry the limits people hit:
BERT's 64-row position table reached through a ``Slice`` of a stored ``arange`` (TorchScript and dynamo
exports), GPT-2's position table indexed by a ``position_ids`` input that counts from the key/value
cache (``past + sequence <= rows``), a CNN's fixed channel count. Every advised shape set (the test run
and the TensorRT min/opt/max profile) is fed to onnxruntime's CPU EP (the real 1.31.1 CPU wheel, in a
child process as everywhere) and must run. Two small graphs built with ``onnx.helper`` mirror what other
exporters write (a ``Range`` of positions after the cache; a stored position buffer shorter than the table).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ortdoctor.core.exitcodes import USAGE
from ortdoctor.doctor.model import check_model, input_kind
from ortdoctor.prove.model_check.inspect import inspect_model
from ortdoctor.prove.model_check.shape_limits import position_limits, shape_problems
from ortdoctor.prove.model_check.shape_subgraph import propose_inputs
from ortdoctor.prove.model_check.trt_profile import advise, engine_cache_dir
from ortdoctor.report.model_check import render_model
from tests.support import testenvs

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "models"
EXPECTED: dict[str, Any] = json.loads((DATA / "expected.json").read_text(encoding="utf-8"))
MODELS = sorted(EXPECTED["models"])
CPU = "CPUExecutionProvider"


def _graph(path: Path) -> Any:
    graph = inspect_model(path).graph
    assert graph is not None
    return graph


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(testenvs.ensure("ort-cpu")), str(ROOT)])}


# the child: materialise each plan as check --model's child does, run it on the CPU EP, say what failed
_RUN = r"""
import json, sys
import onnxruntime as ort
from ortdoctor.prove.model_check.synthetic_feeds import materialise
answers = {}
for key, (model, plan) in json.load(sys.stdin).items():
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    try:
        session.run(None, materialise(plan))
        answers[key] = "ok"
    except Exception as exc:
        answers[key] = f"{type(exc).__name__}: {exc}"
print(json.dumps(answers))
"""


def _run_all(requests: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, str]:
    proc = subprocess.run([sys.executable, "-c", _RUN], input=json.dumps(requests), capture_output=True, text=True,
                          env=_env(), timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer: dict[str, str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return answer


def _advised_sets(path: Path) -> dict[str, dict[str, tuple[int, ...]]]:
    """The test run's shapes and the TensorRT profile's min/opt/max, as check --model advises them."""
    graph = _graph(path)
    plan = propose_inputs(graph)
    advice = advise(graph, plan, str(path), {"HOME": "/nonexistent-home"})
    tested = {i.name: i.shape for i in plan.inputs}
    sets = {"test": tested}
    for pick in ("min", "opt", "max"):
        sets[pick] = {**tested, **{p.name: getattr(p, pick) for p in advice.profiles}}
    return sets


# --------------------------------------------------------------------------------------------------
# Limits read from real exports
# --------------------------------------------------------------------------------------------------
def test_position_limits_of_the_real_exports() -> None:
    described = {name: [(lim.rows, lim.counted) for lim in position_limits(_graph(DATA / f"{name}.onnx"))]
                 for name in ("bert_optimum", "bert_dynamo", "bert_optimum_int8_dynamic", "gpt2_with_past", "cnn")}
    assert described["bert_optimum"] == [(64, (("input_ids", 1),))]  # Slice of a stored arange, Shape(input_ids)[1]
    assert described["bert_dynamo"] == [(64, (("token_type_ids", 1),))]  # Shape(token_type_ids, start=1, end=2)
    assert described["bert_optimum_int8_dynamic"] == [(64, (("input_ids", 1),))]  # through DequantizeLinear
    assert described["gpt2_with_past"] == [(64, (("position_ids", 1), ("past_key_values.0.key", 2)))]
    assert described["cnn"] == []


def test_gpt2_max_profile_fits_the_position_table() -> None:
    """Was: input_ids 8x64 with past 8x2x63x16, positions up to 126 against 64 rows."""
    sets = _advised_sets(DATA / "gpt2_with_past.onnx")
    high = sets["max"]
    assert high["position_ids"][1] + high["past_key_values.0.key"][2] <= 64
    assert high["attention_mask"][1] == high["position_ids"][1] + high["past_key_values.0.key"][2]
    assert all(shape_problems(_graph(DATA / "gpt2_with_past.onnx"), s) == [] for s in sets.values())


def test_static_dims_and_shared_symbols_are_checked() -> None:
    cnn = _graph(DATA / "cnn.onnx")
    assert shape_problems(cnn, {"pixel_values": (1, 4, 32, 32)}) == [
        "pixel_values[1] is fixed at 3 in the model (batchx3xheightxwidth), not 4"]
    assert shape_problems(cnn, {"pixel_values": (1, 3, 32)})[0].startswith("pixel_values has 4 dimensions")
    gpt2 = _graph(DATA / "gpt2_with_past.onnx")
    shapes = {i.name: i.shape for i in propose_inputs(gpt2).inputs}
    assert shape_problems(gpt2, {**shapes, "attention_mask": (1, 17)}) == [
        "attention_mask[1] is 'past_sequence_length + sequence_length' = 16 for these shapes, not 17"]
    bert = _graph(DATA / "bert_optimum.onnx")
    (problem,) = shape_problems(bert, {"input_ids": (1, 8), "attention_mask": (1, 9)})
    assert problem == "attention_mask[1] is 'sequence_length', which input_ids sets to 8, not 9"


@pytest.mark.realwheels
def test_every_advised_shape_set_runs_on_the_cpu_ep() -> None:
    requests: dict[str, tuple[str, dict[str, Any]]] = {}
    for name in MODELS:
        path = DATA / str(EXPECTED["models"][name]["file"])
        graph = _graph(path)
        for pick, shapes in _advised_sets(path).items():
            assert shape_problems(graph, shapes) == [], (name, pick)
            plan = propose_inputs(graph, shapes=shapes)
            assert not plan.problems
            requests[f"{name}:{pick}"] = (str(path), plan.to_json())
    # the limit itself is right: one position past it fails in onnxruntime (its message, not ortdoctor's)
    gpt2 = DATA / "gpt2_with_past.onnx"
    over = propose_inputs(_graph(gpt2), shapes={"input_ids": (1, 33), "past_key_values.0.key": (1, 2, 32, 16)})
    requests["gpt2 one past the table"] = (str(gpt2), over.to_json())
    answers = _run_all(requests)
    assert answers.pop("gpt2 one past the table").startswith("InvalidArgument")
    assert answers == dict.fromkeys(answers, "ok")
    assert len(answers) == 4 * len(MODELS)


# --------------------------------------------------------------------------------------------------
# An impossible --input-shape is refused before anything runs, the limit named, exit code 2
# --------------------------------------------------------------------------------------------------
def test_bert_2x128_is_refused_against_its_64_row_table(tmp_path: Path) -> None:
    # no onnxruntime anywhere: a refusal starts no child, so the missing interpreter is never seen
    report = check_model(DATA / "bert_optimum.onnx", input_shapes=["input_ids=2x128"],
                         python=str(tmp_path / "no-python"))
    assert report.ran is False
    assert report.exit_code == USAGE
    assert report.trt is None  # no TensorRT profile for shapes that cannot run
    assert report.client is None
    (refusal,) = report.refused
    assert "64-row position table bert.embeddings.position_embeddings.weight" in refusal
    (finding,) = [f for f in report.findings if f.severity == "error"]
    assert finding.id == "model-inputs-invalid"
    assert finding.detail.startswith("--input-shape input_ids=2x128: positions up to 127 (input_ids[1] 128)")
    text = render_model(report)
    assert "trt_profile" not in text
    assert report.to_json()["refused"] == [refusal]


def test_gpt2_1x70_is_refused_and_advises_nothing(tmp_path: Path) -> None:
    report = check_model(DATA / "gpt2_with_past.onnx", input_shapes={"input_ids": (1, 70)},
                         python=str(tmp_path / "no-python"))
    assert report.exit_code == USAGE
    assert report.trt is None
    assert "position_ids[1] 70 + past_key_values.0.key[2] 0" in report.refused[0]
    assert "model-run-failed" not in [f.id for f in report.findings]


def test_an_input_file_of_an_impossible_shape_is_refused(tmp_path: Path) -> None:
    ids = tmp_path / "ids.npy"
    np.save(ids, np.ones((1, 100), dtype=np.int64))
    report = check_model(DATA / "bert_optimum.onnx", input_files={"input_ids": str(ids)},
                         python=str(tmp_path / "no-python"))
    assert report.exit_code == USAGE
    assert "positions up to 99 (input_ids[1] 100)" in report.refused[0]
    (finding,) = [f for f in report.findings if f.severity == "error"]
    assert finding.detail.startswith(f"--input input_ids={ids}: ")


def test_a_given_shape_inside_the_limits_still_runs_the_proof_plan(tmp_path: Path) -> None:
    report = check_model(DATA / "bert_optimum.onnx", input_shapes=["input_ids=2x64"],
                         python=str(tmp_path / "no-python"))
    assert report.refused == ()
    assert report.trt is not None
    assert report.trt.provider_options()["trt_profile_max_shapes"] == (
        "input_ids:8x64,attention_mask:8x64,token_type_ids:8x64")


@pytest.mark.realwheels
def test_check_cli_exits_2_for_an_impossible_shape() -> None:
    proc = subprocess.run([sys.executable, "-m", "ortdoctor", "check", "--no-smoke", "--model",
                           str(DATA / "bert_optimum.onnx"), "--input-shape", "input_ids=2x128", "--json"],
                          capture_output=True, text=True, env=_env(), timeout=300, check=False)
    assert proc.returncode == USAGE, proc.stderr[-2000:]
    model = json.loads(proc.stdout)["model"]
    assert model["tensorrt"] is None
    assert "64-row position table" in model["refused"][0]


# --------------------------------------------------------------------------------------------------
# Graphs of other exporters' shape (onnx.helper): positions from a Range after the cache; a short buffer
# --------------------------------------------------------------------------------------------------
def _range_positions_decoder(rows: int = 24) -> onnx.ModelProto:
    """What exporters that compute positions in the graph write: Range(past, past + seq) from the two
    Shapes, then the position Gather (Llama-style exports without a position_ids input)."""
    hidden = 8
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal((rows, hidden)).astype(np.float32), "wpe"),
             numpy_helper.from_array(rng.standard_normal((50, hidden)).astype(np.float32), "wte"),
             numpy_helper.from_array(np.array(1, dtype=np.int64), "one"),
             numpy_helper.from_array(np.array(2, dtype=np.int64), "two")]
    nodes = [
        helper.make_node("Shape", ["input_ids"], ["ids_shape"], name="ids_shape"),
        helper.make_node("Gather", ["ids_shape", "one"], ["seq"], name="seq_len", axis=0),
        helper.make_node("Shape", ["past_key"], ["past_shape"], name="past_shape"),
        helper.make_node("Gather", ["past_shape", "two"], ["past"], name="past_len", axis=0),
        helper.make_node("Add", ["past", "seq"], ["end"], name="end"),
        helper.make_node("Range", ["past", "end", "one"], ["positions"], name="positions"),
        helper.make_node("Gather", ["wpe", "positions"], ["pos_emb"], name="position_embeddings", axis=0),
        helper.make_node("Gather", ["wte", "input_ids"], ["tok_emb"], name="token_embeddings", axis=0),
        helper.make_node("Add", ["tok_emb", "pos_emb"], ["hidden"], name="embed_sum"),
        helper.make_node("Identity", ["hidden"], ["logits"], name="out"),
    ]
    graph = helper.make_graph(
        nodes, "range_positions",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
         helper.make_tensor_value_info("past_key", TensorProto.FLOAT,
                                       ["batch_size", 2, "past_sequence_length", 4])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch_size", "sequence_length", hidden])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="ortdoctor-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def test_range_positions_count_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "range_positions.onnx"
    onnx.save(_range_positions_decoder(), path)
    graph = _graph(path)
    (limit,) = position_limits(graph)
    assert (limit.table, limit.rows) == ("wpe", 24)
    assert set(limit.counted) == {("input_ids", 1), ("past_key", 2)}
    sets = _advised_sets(path)
    assert sets["max"]["input_ids"][1] + sets["max"]["past_key"][2] == 24
    refused = check_model(path, input_shapes=["input_ids=1x10", "past_key=1x2x20x4"], python=str(tmp_path / "none"))
    assert refused.exit_code == USAGE
    assert "positions up to 29" in refused.refused[0]


def test_default_sequence_shrinks_to_a_short_position_table(tmp_path: Path) -> None:
    """The proposed 16 tokens do not fit an 8-row table: the test run takes a sequence that does."""
    path = tmp_path / "short_table.onnx"
    onnx.save(_range_positions_decoder(rows=8), path)
    report = check_model(path, python=str(tmp_path / "no-python"))
    assert report.refused == ()
    assert report.test_inputs is not None
    shapes = {i["name"]: i["shape"] for i in report.test_inputs["inputs"]}
    assert shapes["input_ids"] == [1, 4]
    assert report.trt is not None
    assert shape_problems(_graph(path), {p.name: p.max for p in report.trt.profiles}) == []


@pytest.mark.realwheels
def test_range_positions_advice_runs(tmp_path: Path) -> None:
    path = tmp_path / "range_positions.onnx"
    onnx.save(_range_positions_decoder(), path)
    graph = _graph(path)
    requests = {pick: (str(path), propose_inputs(graph, shapes=shapes).to_json())
                for pick, shapes in _advised_sets(path).items()}
    over = {"input_ids": (1, 5), "past_key": (1, 2, 20, 4)}
    requests["over"] = (str(path), propose_inputs(graph, shapes=over).to_json())
    answers = _run_all(requests)
    assert "[ONNXRuntimeError]" in answers.pop("over")  # onnxruntime's own failure past the limit
    assert answers == {"test": "ok", "min": "ok", "opt": "ok", "max": "ok"}


# --------------------------------------------------------------------------------------------------
# No noise without a CUDA EP; advice that fits the input; the engine cache in the user's cache dir
# --------------------------------------------------------------------------------------------------
@pytest.mark.realwheels
def test_without_cuda_ep_the_environment_is_the_one_headline_cause() -> None:
    env = {**_env(), "PYTHONPATH": str(testenvs.ensure("ort-cpu"))}
    alone = check_model(DATA / "cnn.onnx", env=env)
    (not_on_gpu,) = [f for f in alone.findings if f.id == "model-not-on-gpu"]
    assert not_on_gpu.severity == "error"  # nothing else says it: the model part must
    beside = check_model(DATA / "cnn.onnx", env=env, environment_errors=["ort-cpu-only"])
    (note,) = [f for f in beside.findings if f.id == "model-not-on-gpu"]
    assert note.severity == "info"
    assert "ort-cpu-only" in note.detail
    assert "without --model" not in (note.fix or "")
    assert [f.id for f in beside.findings if f.severity == "error"] == []
    # no CUDA EP: no IO-binding advice for a device no session got
    assert beside.client is None
    assert "must be CUDA tensors" not in render_model(beside)


def test_client_advice_fits_the_input_kind(tmp_path: Path) -> None:
    cnn = check_model(DATA / "cnn.onnx", python=str(tmp_path / "no-python"))
    assert cnn.client is not None
    assert cnn.client["input_kind"] == "image"
    text = render_model(cnn)
    assert "image_processor(images, return_tensors='pt').to('cuda:0')" in text
    assert "tokenizer" not in text
    bert = check_model(DATA / "bert_optimum.onnx", python=str(tmp_path / "no-python"))
    assert "tokenizer(..., return_tensors='pt').to('cuda:0')" in render_model(bert)
    assert input_kind(propose_inputs(_graph(DATA / "gpt2_with_past.onnx"))) == "text"


def test_engine_cache_is_in_the_user_cache_dir(tmp_path: Path) -> None:
    store = tmp_path / "models"
    store.mkdir()
    model = store / "cnn.onnx"
    model.write_bytes((DATA / "cnn.onnx").read_bytes())
    store.chmod(0o555)  # a read-only model store
    try:
        report = check_model(model, python=str(tmp_path / "no-python"), env={"HOME": str(tmp_path / "home"),
                                                                          "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    finally:
        store.chmod(0o755)
    assert report.trt is not None
    path = report.trt.provider_options()["trt_engine_cache_path"]
    assert path.startswith(str(tmp_path / "xdg" / "ortdoctor" / "trt-engines") + os.sep)
    assert not path.startswith(str(store))
    assert engine_cache_dir(str(model), {"HOME": "/home/u"}).startswith("/home/u/.cache/ortdoctor/trt-engines/cnn-")
    assert engine_cache_dir(str(model), {"HOME": "/home/u", "ORTDOCTOR_CACHE_DIR": "/c"}).startswith("/c/trt-engines/")
    # another file of the same name elsewhere gets its own engines
    assert engine_cache_dir("/a/cnn.onnx", {}) != engine_cache_dir("/b/cnn.onnx", {})

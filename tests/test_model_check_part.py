"""``check --model`` above its size limit: the CPU EP's reference covers the model's first blocks (a part cut
at a block boundary, loaded from the file's own bytes with its external data left in place), and a bfloat16
model, which the CPU EP cannot load, gets a float32 copy as its reference.

Real exports (``scripts/export_big_decoder.py``, tests/data/models/README.md): ``decoder_fp16.onnx``, a
6-layer GPT-2 converted to float16 by onnxruntime's converter, weights in ``decoder_fp16.onnx.data``;
``decoder_bf16.onnx``, a 2-layer GPT-2 cast to bfloat16 by torch and exported as it is. They run on the real
onnxruntime 1.31.1 CPU wheel, in child processes (the test process never imports onnxruntime).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from ortdoctor.doctor.model import check_model
from ortdoctor.prove.model_check.budget import plan_comparison
from ortdoctor.prove.model_check.compare import compare_outputs, output_op_classes
from ortdoctor.prove.model_check.inspect import inspect_model
from ortdoctor.prove.model_check.model_part import choose_prefix, prefix_model_bytes
from ortdoctor.prove.model_check.upcast import upcast_bfloat16
from ortdoctor.report.model_check import render_model
from tests.support import testenvs

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "models"
FP16 = DATA / "decoder_fp16.onnx"
BF16 = DATA / "decoder_bf16.onnx"
CPU = "CPUExecutionProvider"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(testenvs.ensure("ort-cpu")), str(ROOT)])}


def _child(code: str, *args: str) -> Any:
    """Run ``code`` with onnxruntime importable; its last stdout line is JSON."""
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=_env(),
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_cut_is_a_block_boundary_within_the_budget() -> None:
    graph = inspect_model(FP16).graph
    assert graph is not None
    cut = choose_prefix(graph, 64 * 1024)
    assert cut is not None
    assert cut.weight_bytes <= 64 * 1024
    assert 0 < cut.nodes < cut.of_nodes
    # the residual stream of a block is one of the tensors that cross; the part reads a share of the weights
    assert any(o.endswith("Add_1_output_0") or o.endswith("Add_output_0") for o in cut.outputs), cut.outputs
    assert cut.weight_bytes < cut.total_weight_bytes / 2
    assert len(cut.outputs) <= 6
    # no budget for the embedding table: no part
    assert choose_prefix(graph, 1024) is None


def test_the_plan_compares_the_part_above_the_limit_and_says_why() -> None:
    ins = inspect_model(FP16)
    plan = plan_comparison(ins.total_bytes, 10 ** 12, limit=400_000, graph=ins.graph)
    assert plan.bounded
    assert plan.part is not None
    assert plan.to_json()["sequence"] is None
    assert plan.to_json()["part"]["nodes"] == plan.part.nodes
    assert f"compare the first {plan.part.nodes} of {plan.part.of_nodes} nodes" in plan.why
    # the part's reference waits for the session under test, even with memory for both: peaks do not add up
    assert not plan.concurrent
    assert "so that their peaks of host memory do not add up" in plan.why
    # under the limit: the whole model
    assert plan_comparison(ins.total_bytes, 10 ** 12, limit=10 ** 9, graph=ins.graph).part is None


_PART_AGAINST_WHOLE = r"""
import json, os, sys
import numpy as np, onnx, onnxruntime as ort
from ortdoctor.prove.model_check.inspect import inspect_model
from ortdoctor.prove.model_check.model_part import EXTERNAL_FOLDER_KEY, choose_prefix, prefix_model_bytes
path, workdir = sys.argv[1], sys.argv[2]
cut = choose_prefix(inspect_model(path).graph, 64 * 1024)
so = ort.SessionOptions()
so.add_session_config_entry(EXTERNAL_FOLDER_KEY, os.path.dirname(path))
os.chdir(workdir)  # the part's external data is found from the model's directory, not from here
part = ort.InferenceSession(prefix_model_bytes(path, cut.nodes, cut.outputs), so, providers=["CPUExecutionProvider"])
# the whole model, loaded the same way, with the cut tensors as extra outputs
whole = onnx.load(path, load_external_data=False)
for name in cut.outputs:
    whole.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
ids = np.arange(12, dtype=np.int64).reshape(1, 12)
feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
got = part.run(None, {i.name: feeds[i.name] for i in part.get_inputs()})
so2 = ort.SessionOptions()
so2.add_session_config_entry(EXTERNAL_FOLDER_KEY, os.path.dirname(path))
full = ort.InferenceSession(whole.SerializeToString(), so2, providers=["CPUExecutionProvider"])
want = full.run(cut.outputs, feeds)
print(json.dumps({"inputs": [i.name for i in part.get_inputs()], "outputs": [o.name for o in part.get_outputs()],
                  "equal": [bool(np.array_equal(a, b)) for a, b in zip(got, want)],
                  "dtypes": [str(a.dtype) for a in got], "expected": list(cut.outputs)}))
"""


@pytest.mark.realwheels
def test_the_part_computes_what_the_whole_model_computes_there(tmp_path: Path) -> None:
    answer = _child(_PART_AGAINST_WHOLE, str(FP16), str(tmp_path))
    assert answer["outputs"] == answer["expected"]
    assert answer["equal"] == [True] * len(answer["expected"])
    assert "float16" in answer["dtypes"]


def test_the_part_is_built_from_the_files_own_bytes() -> None:
    graph = inspect_model(FP16).graph
    assert graph is not None
    cut = choose_prefix(graph, 64 * 1024)
    assert cut is not None
    part = onnx.load_from_string(prefix_model_bytes(str(FP16), cut.nodes, cut.outputs))
    full = onnx.load(str(FP16), load_external_data=False)
    assert [n.name for n in part.graph.node] == [n.name for n in full.graph.node[: cut.nodes]]
    assert [o.name for o in part.graph.output] == list(cut.outputs)
    used = {x for n in part.graph.node for x in n.input}
    assert {t.name for t in part.graph.initializer} == {t.name for t in full.graph.initializer if t.name in used}
    # every weight still points at the model's external data file: nothing was copied
    locations = {e.value for t in part.graph.initializer for e in t.external_data if e.key == "location"}
    assert locations == {"decoder_fp16.onnx.data"}
    assert part.opset_import == full.opset_import


@pytest.mark.realwheels
def test_check_model_compares_the_first_blocks_above_the_limit() -> None:
    report = check_model(FP16, env=_env(), ep=CPU, host_memory=10 ** 12, compare_limit=400_000)
    run = report.run
    assert run is not None
    assert report.comparison is not None
    assert report.comparison["part"] is not None
    assert run["part"]["nodes"] == report.comparison["part"]["nodes"]
    assert run["part"]["ep"]["ok"] is True  # the part ran on the EP under test too
    assert run["ep"]["ok"] is True  # and so did the whole model
    assert run["inputs"]["input_ids"]["shape"] == [1, 16]  # not the one-token fallback
    assert run["agree"] is True
    assert [o["output"] for o in run["outputs"]] == report.comparison["part"]["outputs"]
    text = render_model(report)
    assert "the CPU EP and the EP under test compare the first" in text
    assert "(the whole model)  |  on the compared part:" in text


_BF16_REFERENCE = r"""
import json, sys
import onnxruntime as ort
from ortdoctor.prove.model_check.inspect import inspect_model
from ortdoctor.prove.model_check.proof import reference_run
from ortdoctor.prove.model_check.shape_subgraph import propose_inputs
path = sys.argv[1]
try:
    ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    refused = None
except Exception as exc:
    refused = str(exc)
plan = propose_inputs(inspect_model(path).graph).to_json()
record = reference_run(ort, {"model": path, "plan": plan, "compute_types": sys.argv[2].split(",")})
want = record.get("want") or []
print(json.dumps({"refused": refused, "cpu": record["cpu"], "dtypes": [str(w.dtype) for w in want],
                  "finite": [bool((w == w).all()) for w in want]}))
"""


@pytest.mark.realwheels
def test_a_bfloat16_model_gets_a_float32_reference() -> None:
    answer = _child(_BF16_REFERENCE, str(BF16), "bfloat16")
    assert "NOT_IMPLEMENTED" in answer["refused"]  # the CPU EP has no bfloat16 kernels
    cpu = answer["cpu"]
    assert cpu["ok"] is True
    assert cpu["upcast"]["from"] == "bfloat16"
    assert cpu["upcast"]["tensors"] > 0
    assert "NOT_IMPLEMENTED" in cpu["upcast"]["why"]
    assert answer["dtypes"] == ["float32"]
    assert answer["finite"] == [True]
    # without the model's bfloat16 arithmetic known, no copy is made: the failure stays the answer
    plain = _child(_BF16_REFERENCE, str(BF16), "float32")
    assert plain["cpu"]["session_failed"] is True
    assert "upcast" not in plain["cpu"]


def test_the_float32_copy_casts_every_bfloat16_tensor_and_keeps_the_weights() -> None:
    data = BF16.read_bytes()
    copy, count = upcast_bfloat16(data)
    model = onnx.load_from_string(copy)
    original = onnx.load_from_string(data)
    bf16 = [t.name for t in original.graph.initializer if t.data_type == onnx.TensorProto.BFLOAT16]
    casts = [n for n in model.graph.node if n.op_type == "Cast" and n.input[0] in bf16]
    assert bf16
    assert len(casts) == len(bf16)
    assert count >= len(bf16)
    assert not [n for n in model.graph.node if n.op_type == "Cast"
                for a in n.attribute if a.name == "to" and a.i == onnx.TensorProto.BFLOAT16]
    assert list(model.graph.initializer) == list(original.graph.initializer)  # same bytes, not converted
    assert not model.graph.value_info
    assert upcast_bfloat16(FP16.read_bytes())[1] == 0  # nothing to do for a float16 model


def test_bfloat16_outputs_arrive_as_words_and_are_widened() -> None:
    want = np.array([[0.5, -1.25, 3.0]], np.float32)
    words = (want.view(np.uint32) >> 16).astype(np.uint16)  # what onnxruntime hands numpy for bfloat16
    [record] = compare_outputs(["logits"], [words], [want], ep="CUDAExecutionProvider", tf32=None,
                               compute_types=["bfloat16"], got_types=["tensor(bfloat16)"], upcast=True)
    assert record["agree"] is True
    assert record["relative_error"] == 0.0
    assert record["tolerance"]["bound"] == 1e-1
    assert "float32 copy of the model" in record["tolerance"]["basis"]


def test_op_classes_make_moved_values_exact_and_name_the_arithmetic() -> None:
    graph = inspect_model(FP16).graph
    assert graph is not None
    cut = choose_prefix(graph, 64 * 1024)
    assert cut is not None
    classes = output_op_classes(graph, [*cut.outputs, "onnx::Gather_table"], cut.nodes)
    residual = classes[cut.outputs[-1]]
    assert residual["movement_only"] is False
    assert residual["classes"]["matrix products"] >= 4  # the attention's and the MLP's MatMuls
    assert residual["classes"]["normalisations"] >= 2  # LayerNormalization, Softmax
    # the token embedding is gathered from the table: moved, not computed
    embedding = next(n for n in graph.nodes if n.op_type == "Gather" and "wte" in "".join(n.inputs))
    moved = output_op_classes(graph, [embedding.outputs[0]])[embedding.outputs[0]]
    assert moved == {"movement_only": True, "classes": {}}
    a = np.array([1.0, 2.0], np.float16)
    b = np.array([1.0, 2.001], np.float16)
    [exact] = compare_outputs(["e"], [a], [b], ep="CUDAExecutionProvider", tf32=None, compute_types=["float16"],
                              op_classes={"e": moved})
    assert exact["tolerance"]["bound"] == 0.0
    assert exact["agree"] is False  # one bit off is a difference where nothing was computed
    [computed] = compare_outputs(["r"], [a], [b], ep="CUDAExecutionProvider", tf32=None,
                                 compute_types=["float16"], op_classes={"r": residual})
    assert computed["agree"] is True
    assert "computed through" in computed["tolerance"]["basis"]
    assert "matrix products x" in computed["tolerance"]["basis"]


def test_the_gpu_script_parses_and_passes_shellcheck() -> None:
    script = ROOT / "scripts" / "big_decoder_gpu.sh"
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True, timeout=60, check=False).returncode == 0
    shellcheck = shutil.which("shellcheck") or shutil.which("shellcheck", path=str(Path(sys.executable).parent))
    if shellcheck is not None:
        proc = subprocess.run([shellcheck, "--shell=bash", str(script)], capture_output=True, text=True, timeout=60,
                              check=False)
        assert proc.returncode == 0, proc.stdout

"""Placement judged from onnxruntime's own verbose session logs, captured on an H200 (onnxruntime-gpu
1.31.1, `scripts/model_check_gpu.sh`), for the real exported models in ``tests/data/models``.

ORT's optimizer adds nodes the model file does not have ("Gather", "Gather_token_1" in every BERT and
GPT-2 export) and its own heuristic keeps them on the CPU as shape work ("Force fallback to CPU execution
for node: Gather because the CPU execution path is deemed faster"). They are shape work, not compute the
CUDA EP lacks; an int32 bias DequantizeLinear that has no CUDA kernel is.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from ortdoctor.diagnose import model as mf
from ortdoctor.prove import ort_placement
from ortdoctor.prove.model_check import child
from ortdoctor.prove.model_check.inspect import inspect_model
from ortdoctor.prove.model_check.placement import summarise_placement

DATA = Path(__file__).parent / "data"


def _answer(model: str) -> dict[str, object]:
    log = gzip.decompress((DATA / "ort_logs" / "h200" / f"{model}.onnxruntime-gpu-1.31.1.log.gz").read_bytes()).decode()
    return {"model": f"{model}.onnx", "providers": ["CUDAExecutionProvider", "CPUExecutionProvider"],
            "cuda_ep_active": True, "assignment_source": ["verbose-log"], "assignment": None,
            "placements": ort_placement.parse_placements(log), "memcpy_added": child.parse_memcpy_added(log),
            "cpu_preferred": child.parse_cpu_preferred(log)}


@pytest.mark.parametrize("model", ["bert_optimum", "gpt2_with_past"])
def test_nodes_the_optimizer_added_and_kept_on_the_cpu_are_shape_work(model: str) -> None:
    answer = _answer(model)
    assert {"Gather", "Gather_token_1"} <= set(answer["cpu_preferred"])  # type: ignore[call-overload]
    inspection = inspect_model(DATA / "models" / f"{model}.onnx")
    placement = summarise_placement(answer, inspection)
    assert placement is not None
    assert {n["kind"] for n in placement.cpu_nodes} == {"shape"}
    ids = [f.id for f in mf.placement_findings(placement, answer, inspection, cuda_graph=False)]
    assert "model-cpu-compute-ops" not in ids
    assert "model-shape-ops-on-cpu" in ids


def test_a_dequantize_without_a_cuda_kernel_is_compute_on_the_cpu() -> None:
    answer = _answer("cnn_qdq")
    assert answer["cpu_preferred"] == []
    inspection = inspect_model(DATA / "models" / "cnn_qdq.onnx")
    placement = summarise_placement(answer, inspection)
    assert placement is not None
    assert sorted(n["name"] for n in placement.cpu_nodes if n["kind"] == "compute") == [
        "classifier.bias_DequantizeLinear", "features.0.bias_DequantizeLinear", "features.4.bias_DequantizeLinear",
        "features.6.bias_DequantizeLinear", "features.8.bias_DequantizeLinear"]
    ids = [f.id for f in mf.placement_findings(placement, answer, inspection, cuda_graph=False)]
    assert "model-cpu-compute-ops" in ids

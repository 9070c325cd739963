"""Per-node placement, read from onnxruntime itself (the smoke child and ``check --model`` share it).

The real onnxruntime (CPU build 1.31.1) runs in a child process: the main test process never imports it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ortdoctor.prove import ort_placement
from tests.support import testenvs

ROOT = Path(__file__).resolve().parents[1]
_PREFIX = "2026-12-02 10:00:00.0 [V:onnxruntime:, session_state.cc:1580 VerifyEachNodeIsAssignedToAnEp]"


def test_log_with_several_providers_lists_their_nodes() -> None:
    log = "\n".join([
        f"{_PREFIX} Node placements",
        f"{_PREFIX}  Node(s) placed on [CUDAExecutionProvider]. Number of nodes: 2",
        f"{_PREFIX}   MatMul (smoke_matmul)",
        "   Relu (smoke_relu)",  # some releases print bare continuation lines
        f"{_PREFIX}  Node(s) placed on [CPUExecutionProvider]. Number of nodes: 1",
        f"\x1b[0;36m{_PREFIX}   Shape (s)\x1b[m",
        "2026-12-02 [V:onnxruntime:, session_state.cc:193 CreateGraphInfo] SaveMLValueNameIndexMapping",
    ])
    parsed = ort_placement.parse_placements(log)
    assert parsed is not None
    assert parsed["all_on"] is None
    assert ort_placement.log_nodes_by_provider(parsed) == {
        "CUDAExecutionProvider": ["MatMul (smoke_matmul)", "Relu (smoke_relu)"],
        "CPUExecutionProvider": ["Shape (s)"],
    }


def test_log_with_one_provider_gives_the_count() -> None:
    parsed = ort_placement.parse_placements(f"{_PREFIX}  All nodes placed on [CUDAExecutionProvider]. Number of nodes: 3")
    assert parsed is not None
    assert parsed["all_on"] == "CUDAExecutionProvider"
    assert ort_placement.log_nodes_by_provider(parsed) == {"CUDAExecutionProvider": ["3 nodes"]}


def test_no_placement_block() -> None:
    assert ort_placement.parse_placements("[E:onnxruntime:, x] something failed") is None
    assert ort_placement.log_nodes_by_provider(None) == {}


def test_assignment_grouped_per_provider_in_order() -> None:
    nodes = [{"provider": "CUDAExecutionProvider", "op_type": "MatMul", "name": "m", "domain": ""},
             {"provider": "CPUExecutionProvider", "op_type": "Shape", "name": "s", "domain": ""},
             {"provider": "CUDAExecutionProvider", "op_type": "Relu", "name": "r", "domain": ""}]
    assert ort_placement.nodes_by_provider(nodes) == {
        "CUDAExecutionProvider": ["MatMul (m)", "Relu (r)"], "CPUExecutionProvider": ["Shape (s)"]}


_CHILD = """
import json, sys
import onnxruntime as ort
from ortdoctor.prove import ort_placement
from ortdoctor.prove.smoke.model import build_model
so = ort.SessionOptions()
record = ort_placement.can_record(ort)
if record:
    ort_placement.enable_recording(so)
sess = ort.InferenceSession(build_model(8).data, so, providers=["CPUExecutionProvider"])
plain = ort.InferenceSession(build_model(8).data, providers=["CPUExecutionProvider"])
print(json.dumps({"record": record, "nodes": ort_placement.assignment(sess),
                  "unrecorded": ort_placement.assignment(plain)}))
"""


@pytest.mark.realwheels
def test_assignment_from_the_real_onnxruntime() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(testenvs.ensure("ort-cpu")), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    assert answer["record"] is True
    # ORT's own graph after its fusions: MatMul+Add became one Gemm
    assert sorted(n["op_type"] for n in answer["nodes"]) == ["Gemm", "Relu"]
    assert {n["provider"] for n in answer["nodes"]} == {"CPUExecutionProvider"}
    assert not answer["unrecorded"]  # nothing without the session config entry

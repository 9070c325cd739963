"""The smoke model: valid ONNX (the onnx checker) and the right numbers (the real onnxruntime, CPU EP)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from ortdoctor.prove.smoke.model import IR_VERSION, OPSET, _varint, build_model
from tests.support import testenvs

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("n", [1, 7, 256])
def test_model_passes_the_onnx_checker(n: int) -> None:
    model = build_model(n)
    proto = onnx.load_from_string(model.data)
    onnx.checker.check_model(proto, full_check=True)
    assert proto.ir_version == IR_VERSION
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", OPSET)]
    assert [node.op_type for node in proto.graph.node] == ["MatMul", "Add", "Relu"]
    weights = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
    assert weights["W"].shape == (n, n)
    assert np.array_equal(weights["W"].ravel(), np.frombuffer(model.weights, "<f4"))
    assert np.array_equal(weights["B"], np.frombuffer(model.bias, "<f4"))


def test_relu_has_work_to_do() -> None:
    # Half-negative weights and a mixed-sign bias: Relu must zero a real share of the outputs.
    b = np.frombuffer(build_model(16).bias, "<f4")
    assert (b < 0).any()
    assert (b > 0).any()


def test_varint_matches_protobuf() -> None:
    assert _varint(0) == b"\x00"
    assert _varint(300) == b"\xac\x02"
    assert _varint(-1) == b"\xff" * 9 + b"\x01"


@pytest.mark.parametrize("n", [0, -1, 10**6])
def test_bad_sizes_are_refused(n: int) -> None:
    with pytest.raises(ValueError, match="smoke model size"):
        build_model(n)


_CPU_SCRIPT = """
import json, sys
import numpy as np
import onnxruntime as ort
from ortdoctor.prove.smoke.model import build_model
n = int(sys.argv[1])
m = build_model(n)
s = ort.InferenceSession(m.data, providers=["CPUExecutionProvider"])
x = np.random.default_rng(1).uniform(-1, 1, (n, n)).astype(np.float32)
w = np.frombuffer(m.weights, "<f4").reshape(n, n).astype(np.float64)
b = np.frombuffer(m.bias, "<f4").astype(np.float64)
ref = np.maximum(x.astype(np.float64) @ w + b, 0)
y = s.run(None, {"X": x})[0]
print(json.dumps({"err": float(np.abs(y - ref).max()), "zeros": int((y == 0).sum()), "version": ort.__version__}))
"""


@pytest.mark.realwheels
@pytest.mark.parametrize("n", [8, 256])
def test_model_runs_on_the_real_cpu_onnxruntime(n: int) -> None:
    site = testenvs.ensure("ort-cpu")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-c", _CPU_SCRIPT, str(n)], capture_output=True, text=True,
                          env=env, timeout=120, check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["version"] == testenvs.ORT_CPU_VERSION
    assert out["err"] < 1e-4
    assert 0 < out["zeros"] < n * n

"""float16 models: the CPU EP's reference runs them (onnxruntime casts the nodes that have no float16 CPU
kernel up to float32), and the comparison's bound is the float16 one, its basis saying so.

The model is built with ``onnx.helper`` in the shape of a float16 transformer export (what Optimum's
``--dtype fp16`` and ``model.half()`` + ``torch.onnx.export`` write): float16 weights and activations, a
LayerNormalization, MatMuls, a Softmax over attention-like scores and an Erf-based Gelu. The real
onnxruntime 1.31.1 CPU wheel runs it in the child.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ortdoctor.doctor.model import check_model
from ortdoctor.prove.model_check.compare import TF32_BOUND, tolerance_for
from tests.support import testenvs

CUDA = "CUDAExecutionProvider"


def fp16_block(hidden: int = 32) -> onnx.ModelProto:
    rng = np.random.default_rng(5)

    def w(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float16), name)

    inits = [w("q", hidden, hidden), w("k", hidden, hidden), w("up", hidden, 4 * hidden), w("down", 4 * hidden, hidden),
             numpy_helper.from_array(np.ones(hidden, np.float16), "ln_w"),
             numpy_helper.from_array(np.zeros(hidden, np.float16), "ln_b"),
             numpy_helper.from_array(np.array(0.7071, np.float16), "inv_sqrt2"),
             numpy_helper.from_array(np.array(1.0, np.float16), "one"),
             numpy_helper.from_array(np.array(0.5, np.float16), "half")]
    nodes = [
        helper.make_node("LayerNormalization", ["x", "ln_w", "ln_b"], ["n"], name="ln", axis=-1),
        helper.make_node("MatMul", ["n", "q"], ["qn"], name="q_proj"),
        helper.make_node("MatMul", ["n", "k"], ["kn"], name="k_proj"),
        helper.make_node("Transpose", ["kn"], ["kt"], name="k_t", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["qn", "kt"], ["scores"], name="scores"),
        helper.make_node("Softmax", ["scores"], ["probs"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "n"], ["ctx"], name="context"),
        helper.make_node("MatMul", ["ctx", "up"], ["u"], name="up_proj"),
        helper.make_node("Mul", ["u", "inv_sqrt2"], ["us"], name="gelu_scale"),
        helper.make_node("Erf", ["us"], ["e"], name="gelu_erf"),
        helper.make_node("Add", ["e", "one"], ["e1"], name="gelu_add"),
        helper.make_node("Mul", ["u", "e1"], ["ue"], name="gelu_mul"),
        helper.make_node("Mul", ["ue", "half"], ["g"], name="gelu_half"),
        helper.make_node("MatMul", ["g", "down"], ["d"], name="down_proj"),
        helper.make_node("Add", ["x", "d"], ["y"], name="residual"),
    ]
    graph = helper.make_graph(
        nodes, "fp16_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, ["batch_size", "sequence_length", hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, ["batch_size", "sequence_length", hidden])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="ortdoctor-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def test_float16_bound_and_its_basis() -> None:
    tol = tolerance_for("float16", ep=CUDA, tf32=None, compute_types=["float16"])
    assert tol.bound == 2e-2
    assert "CPU EP reference that computes float16 nodes without a float16 kernel in float32" in tol.basis
    # a float32 output of a float16 model carries float16 error
    assert tolerance_for("float32", ep=CUDA, tf32=None, compute_types=["float16", "float32"]).bound == 2e-2
    assert tolerance_for("bfloat16", ep=CUDA, tf32=None, compute_types=["bfloat16"]).bound == 1e-1
    assert tolerance_for("float32", ep=CUDA, tf32=None, compute_types=["float32"]).bound == TF32_BOUND


@pytest.mark.realwheels
def test_float16_model_gets_a_cpu_reference(tmp_path: Path) -> None:
    path = tmp_path / "fp16_block.onnx"
    onnx.save(fp16_block(), path)
    env = {**os.environ, "PYTHONPATH": str(testenvs.ensure("ort-cpu"))}
    report = check_model(path, env=env, ep="CPUExecutionProvider")
    run = report.run
    assert run is not None
    assert run["inputs"]["x"]["dtype"] == "float16"
    assert run["cpu"]["ok"] is True  # no "no CPU EP reference": the CPU EP upcasts what it has no kernel for
    assert run["agree"] is True
    (out,) = run["outputs"]
    assert out["dtype"] == "float16"

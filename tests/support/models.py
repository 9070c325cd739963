"""Small ONNX models for the model check, built with the ``onnx`` package (no onnxruntime in-process).

Four real models (float MatMul, dynamically quantized, a Loop, a shape subgraph) and the bad ones people
actually hit (not ONNX, truncated, external data missing, opset too new). Every good model passes
``onnx.checker``. ``build_all(directory)`` writes them all and returns their paths by name; the GPU demo
script uses the same builders.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IR_VERSION = 8  # loads on every onnxruntime the project supports
OPSET = 17


def _model(graph: onnx.GraphProto, opset: int = OPSET) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="ortdoctor-tests")
    model.ir_version = IR_VERSION
    return model


def float_matmul(n: int = 64) -> onnx.ModelProto:
    """Y = Relu(X @ W + B), X [batch, n]: every node has a CUDA kernel."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((n, n)).astype(np.float32), "W")
    b = numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "B")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["XW"], name="matmul"),
         helper.make_node("Add", ["XW", "B"], ["XWB"], name="add"),
         helper.make_node("Relu", ["XWB"], ["Y"], name="relu")],
        "float_matmul",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", n])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", n])],
        [w, b],
    )
    return _model(graph)


def dynamic_quantized(n: int = 64) -> onnx.ModelProto:
    """What ``quantize_dynamic`` writes for one MatMul: DynamicQuantizeLinear -> MatMulInteger -> rescale."""
    rng = np.random.default_rng(2)
    inits = [
        numpy_helper.from_array(rng.integers(0, 255, (n, n)).astype(np.uint8), "W_quantized"),
        numpy_helper.from_array(np.array(128, dtype=np.uint8), "W_zero_point"),
        numpy_helper.from_array(np.array(0.01, dtype=np.float32), "W_scale"),
    ]
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["X"], ["X_q", "X_scale", "X_zero_point"], name="X_quant"),
        helper.make_node("MatMulInteger", ["X_q", "W_quantized", "X_zero_point", "W_zero_point"],
                         ["Y_int"], name="matmul_integer"),
        helper.make_node("Cast", ["Y_int"], ["Y_float"], to=TensorProto.FLOAT, name="cast"),
        helper.make_node("Mul", ["X_scale", "W_scale"], ["scale"], name="scale_mul"),
        helper.make_node("Mul", ["Y_float", "scale"], ["Y"], name="rescale"),
    ]
    graph = helper.make_graph(
        nodes, "dynamic_quantized",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", n])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", n])],
        inits,
    )
    return _model(graph)


def with_loop(n: int = 16, trips: int = 3) -> onnx.ModelProto:
    """Y = X + trips * C computed by a Loop whose body adds C each iteration (fixed input shape)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "C"], ["acc_out"], name="body_add"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond")],
        "loop_body",
        [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [1, n])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [1, n])],
    )
    inits = [
        numpy_helper.from_array(np.array(trips, dtype=np.int64), "trips"),
        numpy_helper.from_array(np.array(True), "cond"),
        numpy_helper.from_array(np.ones((1, n), dtype=np.float32), "C"),
    ]
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "cond", "X"], ["Y"], body=body, name="loop")],
        "with_loop",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, n])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, n])],
        inits,
    )
    return _model(graph)


def shape_subgraph(n: int = 8) -> onnx.ModelProto:
    """Flatten X [batch, n, n] with a computed shape: Shape -> Gather -> Unsqueeze -> Concat -> Reshape."""
    inits = [
        numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
        numpy_helper.from_array(np.array([0], dtype=np.int64), "axes0"),
        numpy_helper.from_array(np.array([-1], dtype=np.int64), "minus_one"),
    ]
    nodes = [
        helper.make_node("Shape", ["X"], ["x_shape"], name="shape"),
        helper.make_node("Gather", ["x_shape", "zero"], ["batch"], axis=0, name="gather_batch"),
        helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch_1d"], name="unsqueeze_batch"),
        helper.make_node("Concat", ["batch_1d", "minus_one"], ["new_shape"], axis=0, name="concat_shape"),
        helper.make_node("Reshape", ["X", "new_shape"], ["flat"], name="reshape"),
        helper.make_node("Relu", ["flat"], ["Y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes, "shape_subgraph",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", n, n])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", n * n])],
        inits,
    )
    return _model(graph)


GOOD = {"float": float_matmul, "quantized": dynamic_quantized, "loop": with_loop, "shape": shape_subgraph}


def build_good(directory: Path) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, builder in GOOD.items():
        model = builder()
        onnx.checker.check_model(model, full_check=True)
        out[name] = directory / f"{name}.onnx"
        onnx.save(model, out[name])
    return out


def build_bad(directory: Path) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    out = {}
    out["not_onnx"] = directory / "not_onnx.onnx"
    out["not_onnx"].write_text("<html><body>404 Not Found</body></html>\n")
    good = float_matmul().SerializeToString()
    out["truncated"] = directory / "truncated.onnx"
    out["truncated"].write_bytes(good[: len(good) // 2])
    # external data: saved next to the model, then the data file removed (the .onnx copied alone)
    ext_dir = directory / "external"
    ext_dir.mkdir(exist_ok=True)
    out["external_missing"] = ext_dir / "model.onnx"
    onnx.save(float_matmul(), out["external_missing"], save_as_external_data=True,
              all_tensors_to_one_file=True, location="model.onnx.data", size_threshold=0)
    (ext_dir / "model.onnx.data").unlink()
    relu = helper.make_graph(
        [helper.make_node("Relu", ["X"], ["Y"], name="relu")], "future",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 4])],
    )
    out["opset_too_new"] = directory / "opset99.onnx"
    onnx.save(_model(relu, opset=99), out["opset_too_new"])
    return out


def build_external_ok(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "model.onnx"
    onnx.save(float_matmul(), path, save_as_external_data=True, all_tensors_to_one_file=True,
              location="model.onnx.data", size_threshold=0)
    return path

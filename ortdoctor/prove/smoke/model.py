"""The smoke model, ``Y = Relu(X @ W + B)``, written as ONNX protobuf bytes without the ``onnx`` package.

Why these three ops: a MatMul alone only exercises cuBLAS, which ships its own kernels for new GPU
architectures, so it can pass on a wheel that has no kernels of its own for the GPU (failure mode 10).
``Add`` and ``Relu`` are ORT's own CUDA kernels, so the model fails loudly in exactly that case.
Everything is float32 with fixed shapes, so the CUDA EP takes every node (it deliberately places some
int64 shape ops on the CPU, which ``session.disable_cpu_ep_fallback`` would reject) and CUDA graphs can
capture the whole model.

The weights are a deterministic pattern computed here, so the child can rebuild them for the numpy
reference from :func:`weights` without shipping a model file. The encoder below writes only the few
protobuf fields the model needs (field numbers from ``onnx/onnx.proto``).

``IR_VERSION`` 8 with opset 13 loads on every onnxruntime since 1.10 (the project supports 1.15+).
"""

from __future__ import annotations

import sys
from array import array

from ortdoctor.core.record import record

IR_VERSION = 8
OPSET = 13
DEFAULT_N = 256
_FLOAT = 1  # TensorProto.DataType.FLOAT

INPUT_NAME = "X"
OUTPUT_NAME = "Y"


# --------------------------------------------------------------------------------------------------
# A minimal protobuf writer: varints, length-delimited fields and the three wire types ONNX needs here.
# --------------------------------------------------------------------------------------------------
def _varint(value: int) -> bytes:
    if value < 0:  # protobuf encodes negative int64 as ten-byte two's complement
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field_number: int, wire_type: int) -> bytes:
    return _varint((field_number << 3) | wire_type)


def _int(field_number: int, value: int) -> bytes:
    return _key(field_number, 0) + _varint(value)


def _bytes(field_number: int, payload: bytes) -> bytes:
    return _key(field_number, 2) + _varint(len(payload)) + payload


def _str(field_number: int, text: str) -> bytes:
    return _bytes(field_number, text.encode("utf-8"))


# --------------------------------------------------------------------------------------------------
# ONNX messages (only the fields used)
# --------------------------------------------------------------------------------------------------
def _value_info(name: str, dims: tuple[int, ...]) -> bytes:
    # ValueInfoProto{name=1, type=2}; TypeProto{tensor_type=1}; Tensor{elem_type=1, shape=2};
    # TensorShapeProto{dim=1}; Dimension{dim_value=1}
    shape = b"".join(_bytes(1, _int(1, d)) for d in dims)
    tensor_type = _int(1, _FLOAT) + _bytes(2, shape)
    return _str(1, name) + _bytes(2, _bytes(1, tensor_type))


def _tensor(name: str, dims: tuple[int, ...], raw: bytes) -> bytes:
    # TensorProto{dims=1 (repeated int64), data_type=2, name=8, raw_data=9}
    return b"".join(_int(1, d) for d in dims) + _int(2, _FLOAT) + _str(8, name) + _bytes(9, raw)


def _node(op_type: str, inputs: tuple[str, ...], outputs: tuple[str, ...], name: str) -> bytes:
    # NodeProto{input=1, output=2, name=3, op_type=4}
    return (
        b"".join(_str(1, i) for i in inputs)
        + b"".join(_str(2, o) for o in outputs)
        + _str(3, name)
        + _str(4, op_type)
    )


def _float32_le(values: list[float]) -> bytes:
    """ONNX raw_data is little-endian whatever the host is."""
    arr = array("f", values)
    if sys.byteorder != "little":
        arr.byteswap()
    return arr.tobytes()


def weight_values(n: int) -> list[float]:
    """W[i][j], row-major: small exact binary fractions in [-0.5, 0.5), about half negative."""
    return [(((i * 7 + j * 13) % 17) - 8) / 16.0 for i in range(n) for j in range(n)]


def bias_values(n: int) -> list[float]:
    """B[j]: a mix of signs, so Relu zeroes a real share of the outputs."""
    return [((j % 5) - 2) / 4.0 for j in range(n)]


@record
class SmokeModel:
    n: int
    data: bytes  # the serialised ModelProto
    weights: bytes  # W as little-endian float32, row-major [n, n]
    bias: bytes  # B as little-endian float32 [n]


def build_model(n: int = DEFAULT_N) -> SmokeModel:
    """Return the serialised model ``Y = Relu(X @ W + B)`` for ``X``, ``Y`` of shape ``[n, n]``."""
    if not isinstance(n, int) or n < 1 or n > 8192:
        raise ValueError(f"smoke model size must be an integer in 1..8192, got {n!r}")
    w = _float32_le(weight_values(n))
    b = _float32_le(bias_values(n))
    graph = (
        _bytes(1, _node("MatMul", (INPUT_NAME, "W"), ("XW",), "smoke_matmul"))
        + _bytes(1, _node("Add", ("XW", "B"), ("XWB",), "smoke_add"))
        + _bytes(1, _node("Relu", ("XWB",), (OUTPUT_NAME,), "smoke_relu"))
        + _str(2, "ortdoctor_smoke")
        + _bytes(5, _tensor("W", (n, n), w))
        + _bytes(5, _tensor("B", (n,), b))
        + _bytes(11, _value_info(INPUT_NAME, (n, n)))
        + _bytes(12, _value_info(OUTPUT_NAME, (n, n)))
    )
    # ModelProto{ir_version=1, producer_name=2, producer_version=3, graph=7, opset_import=8}
    # OperatorSetIdProto{domain=1, version=2}; the default domain is the empty string.
    model = (
        _int(1, IR_VERSION)
        + _str(2, "ortdoctor")
        + _str(3, "smoke")
        + _bytes(7, graph)
        + _bytes(8, _str(1, "") + _int(2, OPSET))
    )
    return SmokeModel(n=n, data=model, weights=w, bias=b)


__all__ = ["DEFAULT_N", "INPUT_NAME", "IR_VERSION", "OPSET", "OUTPUT_NAME", "SmokeModel", "build_model"]

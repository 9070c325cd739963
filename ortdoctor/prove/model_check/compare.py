"""Compare the outputs of the execution provider under test with the CPU EP's, within honest tolerances.

Why these tolerances. The error is measured per output as the largest absolute difference divided by
the largest magnitude of the CPU EP's output (``max|a - b| / max|b|``): a whole model's error grows
with the size of its activations, not element by element, so a tolerance relative to each element
would fail on every value near zero. The bound depends on the narrowest arithmetic either side used:

- **float32, TF32 allowed: 1e-2.** onnxruntime's CUDA EP enables TF32 by default (``use_tf32`` is
  ``true`` in ``onnxruntime/core/providers/cuda/cuda_execution_provider_info.h``); on Ampere and newer
  GPUs (the H200 included) cuBLAS and cuDNN then round MatMul/Gemm/Conv inputs to a 10-bit mantissa
  (unit roundoff 2^-11, about 4.9e-4). Each layer adds an error of that order; a few dozen layers stay
  below 1e-2 of the output's range.
- **float32 without TF32: 1e-4** (``use_tf32=0``, or a GPU older than compute capability 8.0). Both sides
  are float32, but the GPU sums in a different order and uses its own exp/erf/tanh: differences of a few
  float32 ulps per op (2^-24 = 6e-8) that stay far below 1e-4 through a network.
- **float16: 2e-2.** Activations are stored with a 10-bit mantissa (4.9e-4 per rounding) and rounded
  after every op, not only inside matrix products: more roundings than TF32. The CPU EP's reference of a
  float16 model is partly float32: where the CPU EP has no float16 kernel for a node (most ops outside
  MatMul/Gemm), onnxruntime's graph transformer (InsertCastTransformer) casts its inputs up to float32
  and its outputs back, so the reference is at least as precise as float16 throughout, and the bound
  measures the EP's own float16 error. The tolerance's basis says so in the report.
- **bfloat16: 1e-1.** A 7-bit mantissa (unit roundoff 3.9e-3). The CPU EP has no bfloat16 kernels for
  most ops and onnxruntime inserts no casts for bfloat16, so its reference runs a float32 copy of the model
  (:mod:`.upcast`: the same bfloat16 weights, cast to float32 exactly) and the report says so. onnxruntime
  hands bfloat16 outputs to numpy as their raw 16-bit words (numpy has no bfloat16); they are widened to
  float32 before the comparison.
- **8-bit quantized models: 5e-2.** A value that lands near the middle between two quantization steps
  may round to either when the float arithmetic before it differs by a TF32 rounding (one step is 1/256
  of the tensor's range), and the EPs run quantized nodes differently (the CPU EP fuses QDQ groups into
  int8 kernels, the CUDA EP runs DequantizeLinear, the float op and QuantizeLinear); a few such steps
  reach the output.
- **float64: 1e-7.** Only the order of summation differs.
- **CPU EP against CPU EP: 1e-5.** The same kernels; only thread scheduling may reorder reductions.
- **Integer and bool outputs: exact.** Token ids, argmax results and masks either agree or do not;
  the number of differing elements is reported.

Per op class: an output that only moves values (Gather, Slice, Reshape, Transpose, Concat, Where, Cast
... from the inputs and weights: :data:`MOVEMENT_OPS`) is computed by no arithmetic, so both EPs must give the
same bits whatever its type: it is compared exactly. For the others the basis names the op classes the
output is computed through (matrix products, normalisations, exponentials ...), counted on the graph
(:func:`output_op_classes`, in the parent).

An output where one side is NaN or infinite and the other is not never agrees. :func:`tolerance_for` is
pure; :func:`compare_outputs` runs in the child, where numpy is at hand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ortdoctor.core.ep_names import CPU_EP, CUDA_EP
from ortdoctor.core.record import record
from ortdoctor.prove.model_check.graph import ModelGraph

_FLOAT_BOUNDS = {"float64": 1e-7, "float32": 1e-4, "float16": 2e-2, "bfloat16": 1e-1}
TF32_BOUND = 1e-2
SAME_EP_BOUND = 1e-5
QUANTIZED_BOUND = 5e-2
#: what ``compute_types`` holds for a model with quantization ops (QuantizeLinear, MatMulInteger ...)
QUANTIZED = "int8"


#: ops that move or select values without computing new ones (a Cast rounds the same way on every EP:
#: IEEE round-to-nearest-even)
MOVEMENT_OPS = frozenset({
    "Gather", "GatherElements", "GatherND", "Slice", "Reshape", "Transpose", "Concat", "Split", "Squeeze",
    "Unsqueeze", "Expand", "Flatten", "Identity", "Tile", "Where", "Cast", "CastLike", "Constant",
    "ConstantOfShape", "Shape", "Size", "Pad", "DepthToSpace", "SpaceToDepth", "Trilu",
})
_CLASSES = {
    "matrix products": frozenset({"MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum", "FusedMatMul", "Attention",
                                  "MultiHeadAttention", "GroupQueryAttention", "MatMulNBits"}),
    "normalisations": frozenset({"LayerNormalization", "SimplifiedLayerNormalization", "SkipLayerNormalization",
                                 "BatchNormalization", "InstanceNormalization", "GroupNormalization", "Softmax",
                                 "LogSoftmax", "ReduceMean", "ReduceSum", "ReduceL2"}),
    "exponentials": frozenset({"Exp", "Log", "Tanh", "Erf", "Sigmoid", "Gelu", "FastGelu", "Pow", "Sqrt",
                               "Reciprocal", "Softplus", "HardSigmoid"}),
}


def output_op_classes(graph: ModelGraph, outputs: Sequence[str], nodes: int | None = None) -> dict[str, dict[str, Any]]:
    """For each output: ``movement_only`` (no node on its way from the inputs and weights computes) and the
    op classes it is computed through, with counts. ``nodes`` limits the graph to its first nodes (the
    compared part)."""
    ordered = graph.nodes[:nodes] if nodes is not None else graph.nodes
    producer = {out: node for node in ordered for out in node.outputs if out}
    result: dict[str, dict[str, Any]] = {}
    for name in outputs:
        seen: set[int] = set()
        stack = [name]
        counts: dict[str, int] = {}
        arithmetic = False
        while stack:
            node = producer.get(stack.pop())
            if node is None or node.index in seen:
                continue
            seen.add(node.index)
            if node.op_type not in MOVEMENT_OPS:
                arithmetic = True
                kind = next((c for c, ops in _CLASSES.items() if node.op_type in ops), "elementwise")
                counts[kind] = counts.get(kind, 0) + 1
            stack.extend(x for x in node.inputs if x)
        result[name] = {"movement_only": not arithmetic, "classes": counts}
    return result


@record
class Tolerance:
    bound: float  # largest allowed max|a-b| / max|b|; 0.0 means exact
    basis: str  # why, in words a report can print

    def to_json(self) -> dict[str, Any]:
        return {"bound": self.bound, "basis": self.basis}


def tolerance_for(dtype: str, *, ep: str, tf32: bool | None, compute_types: Sequence[str] = (),
                  upcast: bool = False) -> Tolerance:
    """The bound for one output of ``dtype`` computed by ``ep`` against the CPU EP.

    ``tf32``: whether the EP may use TF32 (None: unknown, taken as yes for the CUDA EP, its default).
    ``compute_types``: float types the model computes in (its initializers and inputs): a float32 output
    of a float16 model carries float16 error; :data:`QUANTIZED` when it has quantization ops. ``upcast``:
    the CPU EP ran a float32 copy of the model (:mod:`.upcast`).
    """
    if dtype not in _FLOAT_BOUNDS:
        return Tolerance(0.0, f"{dtype}: exact")
    if ep == CPU_EP:
        return Tolerance(SAME_EP_BOUND, "CPU EP against CPU EP: the same kernels")
    if QUANTIZED in compute_types:
        return Tolerance(QUANTIZED_BOUND, "8-bit quantized arithmetic: values may round to a neighbouring "
                         "quantization step (1/256 of a tensor's range)")
    narrowest = _narrowest([dtype, *compute_types])
    if narrowest in ("bfloat16", "float16"):
        bound = _FLOAT_BOUNDS[narrowest]
        mantissa = "7" if narrowest == "bfloat16" else "10"
        if upcast:
            return Tolerance(bound, f"{narrowest} arithmetic ({mantissa}-bit mantissa) against the CPU EP's run of a "
                             f"float32 copy of the model (the CPU EP has no {narrowest} kernels: its {narrowest} "
                             "weights were cast to float32, exactly)")
        return Tolerance(bound, f"{narrowest} arithmetic ({mantissa}-bit mantissa) "
                         f"against a CPU EP reference that computes {narrowest} nodes without a {narrowest} "
                         "kernel in float32 (onnxruntime's CPU EP inserts the casts)")
    if narrowest == "float32" and ep == CUDA_EP and tf32 is not False:
        return Tolerance(TF32_BOUND, "float32 with TF32 allowed (the CUDA EP's default use_tf32=1 rounds "
                         "MatMul/Conv inputs to 10 mantissa bits on Ampere and newer)")
    if narrowest == "float32":
        return Tolerance(_FLOAT_BOUNDS["float32"], "float32 without TF32: summation order and math functions differ")
    return Tolerance(_FLOAT_BOUNDS["float64"], "float64: summation order differs")


def _narrowest(types: Sequence[str]) -> str:
    order = ["bfloat16", "float16", "float32", "float64"]
    present = [t for t in order if t in types]
    return present[0] if present else "float64"


def compare_outputs(names: Sequence[str], got: Sequence[Any], want: Sequence[Any], *, ep: str,
                    tf32: bool | None, compute_types: Sequence[str] = (), got_types: Sequence[str] = (),
                    upcast: bool = False, op_classes: Mapping[str, Mapping[str, Any]] | None = None
                    ) -> list[dict[str, Any]]:
    """One record per output: shapes, the largest errors, the tolerance and whether it holds.

    ``got`` are the EP's outputs, ``want`` the CPU EP's (numpy arrays; anything else is "not a tensor");
    ``got_types`` the EP session's output types (``tensor(bfloat16)`` outputs arrive as 16-bit words);
    ``upcast``: the CPU EP ran a float32 copy of the model. ``op_classes``: :func:`output_op_classes`'s
    record of each output (an output that only moves values is compared exactly).
    """
    import numpy as np

    out = []
    types = list(got_types) or [""] * len(names)
    for name, a, b, kind in zip(names, got, want, types, strict=True):
        if kind == "tensor(bfloat16)" and isinstance(a, np.ndarray) and a.dtype == np.uint16:
            a = (a.astype(np.uint32) << 16).view(np.float32)  # bfloat16 is float32's upper half
            if isinstance(b, np.ndarray) and b.dtype == np.uint16:
                b = (b.astype(np.uint32) << 16).view(np.float32)
        record: dict[str, Any] = {"output": name}
        if not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray):
            record.update(compared=False, agree=None, reason="not a tensor (a sequence or map output)")
            out.append(record)
            continue
        dtype = _dtype_name(b.dtype)
        tol = tolerance_for(dtype, ep=ep, tf32=tf32, compute_types=compute_types, upcast=upcast)
        tol = _by_op_class(tol, dtype, (op_classes or {}).get(name))
        record.update(dtype=dtype, shape=list(b.shape), tolerance=tol.to_json(), compared=True)
        if a.shape != b.shape:
            record.update(agree=False, reason=f"shapes differ: {list(a.shape)} against {list(b.shape)}")
        elif b.size == 0:
            record.update(agree=True, max_abs_error=0.0, relative_error=0.0, mismatched=0)
        elif tol.bound == 0.0:
            mismatched = int(np.count_nonzero(a != b))
            record.update(agree=mismatched == 0, mismatched=mismatched, elements=int(b.size),
                          max_abs_error=float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max())
                          if dtype != "bool" else float(mismatched > 0))
        else:
            record.update(_float_errors(np, a, b, tol.bound))
        out.append(record)
    return out


def _by_op_class(tol: Tolerance, dtype: str, classes: Mapping[str, Any] | None) -> Tolerance:
    if classes is None or tol.bound == 0.0:
        return tol
    if classes.get("movement_only"):
        return Tolerance(0.0, f"{dtype} values only moved (gathered, sliced, reshaped, cast): no arithmetic, so "
                         "the same bits on every EP")
    counts = classes.get("classes") or {}
    if not counts:
        return tol
    through = ", ".join(f"{kind} x{n}" for kind, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    return Tolerance(tol.bound, f"{tol.basis}; computed through {through}")


def _float_errors(np: Any, a: Any, b: Any, bound: float) -> dict[str, Any]:
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: counted below, not warned about
        return _errors(np, a.astype(np.float64), b.astype(np.float64), bound, b.shape)


def _errors(np: Any, a64: Any, b64: Any, bound: float, shape: tuple[int, ...]) -> dict[str, Any]:
    finite_a, finite_b = np.isfinite(a64), np.isfinite(b64)
    # NaN/inf on one side only never agrees; where both are the same non-finite value they agree
    both = finite_a & finite_b
    odd = int(np.count_nonzero(finite_a != finite_b)
              + np.count_nonzero(~finite_a & ~finite_b & ~((a64 == b64) | (np.isnan(a64) & np.isnan(b64)))))
    diff = np.abs(a64[both] - b64[both])
    max_abs = float(diff.max()) if diff.size else 0.0
    scale = float(np.abs(b64[both]).max()) if diff.size else 0.0
    relative = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
    where = int(np.argmax(np.where(both, np.abs(a64 - b64), -1.0)))
    return {"max_abs_error": max_abs, "reference_max_abs": scale, "relative_error": relative,
            "nonfinite_mismatches": odd, "agree": odd == 0 and relative <= bound,
            "worst_index": [int(i) for i in np.unravel_index(where, shape)]}


def _dtype_name(dtype: Any) -> str:
    name = str(getattr(dtype, "name", dtype))
    return {"bool_": "bool"}.get(name, name)


def summarise(records: Sequence[Mapping[str, Any]]) -> bool | None:
    """True when every compared output agrees, False when one does not, None when none was compared."""
    compared = [r for r in records if r.get("compared")]
    if not compared:
        return None
    return all(bool(r.get("agree")) for r in compared)


__all__ = ["MOVEMENT_OPS", "QUANTIZED", "QUANTIZED_BOUND", "SAME_EP_BOUND", "TF32_BOUND", "Tolerance", "compare_outputs", "output_op_classes", "summarise", "tolerance_for"]

"""Static analyses over a model's top-level graph: shape-only nodes, embedding tables, valid synthetic inputs.

Three questions that the file alone answers, before any session exists:

1. **Which nodes only compute shapes?** onnxruntime's CUDA EP keeps small shape computations on the CPU
   on purpose (``GetCpuPreferredNodes`` in ``onnxruntime/core/framework/fallback_cpu_capability.cc``):
   ``Shape`` writes its result to host memory, and a node whose inputs are all such host tensors or small
   initializers (at most 100 elements) runs on the CPU rather than copying a few int64 values to the
   device and back. A report that called those nodes "compute on the CPU" would send people chasing a
   non-problem, so :func:`shape_only_nodes` finds them with two rules:

   - *from a shape*: ``Shape``/``Size``, and every node that reads such a value at a data input while all
     its other inputs are shape values or small constants (Gather/Unsqueeze/Concat/Cast/Sqrt/Div ...);
   - *feeds a shape*: every node whose outputs are read only at shape-like inputs (Reshape's shape,
     Expand's shape, Slice's starts/ends/axes/steps, ConstantOfShape's input, Range, Tile's repeats,
     Unsqueeze/Squeeze axes, Resize's roi/scales/sizes, TopK's k, Pad's pads, Reduce* axes ...) or by
     nodes already judged shape-only. Reading a value with ``Shape`` does not count: a MatMul whose
     output is only measured is still a MatMul.

   Ops that do real work (MatMul, Gemm, Conv, Softmax, the normalisations, attention, quantized kernels)
   and nodes that read a large initializer are never shape-only.

2. **Which embedding tables do the integer inputs index?** :func:`embedding_tables` follows each
   ``Gather`` whose data is an initializer back through value-preserving ops (Cast, Unsqueeze, Reshape
   ...) to a graph input. Token ids must lie in ``[0, rows)``; random ids beyond that make
   onnxruntime fail with "indices element out of data bounds".

3. **Which inputs make a valid run?** :func:`propose_inputs` returns a plain description per input
   (dtype, shape, kind, value range) that a child process materialises with numpy
   (:mod:`ortdoctor.prove.model_check.synthetic_feeds`): batch 1, sequence 16, an empty key/value cache,
   224x224 images, one second of 16 kHz audio; token ids inside their table, attention masks of ones,
   position ids counting from the cache length.

Pure functions over :class:`~ortdoctor.prove.model_check.inspect.ModelGraph`; no numpy, no onnxruntime.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from ortdoctor.core.record import field, record
from ortdoctor.prove.model_check.graph import GraphNode, InputInfo, ModelGraph, TensorInfo

#: onnxruntime's kSmallInitializerThreshold: initializers up to this many elements count as "small".
SMALL_ELEMENTS = 100

SHAPE_SOURCES = frozenset({"Shape", "Size"})

#: ai.onnx op -> positions of the inputs that carry shapes, axes, sizes or counts rather than data. The
#: CUDA EP's kernels read these from host memory (they are registered as CPU inputs).
SHAPE_SLOTS: Mapping[str, frozenset[int]] = {
    "Reshape": frozenset({1}),
    "Expand": frozenset({1}),
    "Slice": frozenset({1, 2, 3, 4}),
    "ConstantOfShape": frozenset({0}),
    "Range": frozenset({0, 1, 2}),
    "Tile": frozenset({1}),
    "Unsqueeze": frozenset({1}),
    "Squeeze": frozenset({1}),
    "Resize": frozenset({1, 2, 3}),
    "Upsample": frozenset({1}),
    "TopK": frozenset({1}),
    "Pad": frozenset({1, 3}),
    "OneHot": frozenset({1}),
    "Split": frozenset({1}),
    "Trilu": frozenset({1}),
    "CumSum": frozenset({1}),
    "CenterCropPad": frozenset({1}),
    "Col2Im": frozenset({1, 2}),
    "DFT": frozenset({1, 2}),
    "NonMaxSuppression": frozenset({2, 3, 4}),
    **{op: frozenset({1}) for op in (
        "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")},
}

#: Ops that do the model's real work: never shape-only, whatever feeds them.
HEAVY_OPS = frozenset({
    "MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum", "Softmax", "LogSoftmax",
    "LayerNormalization", "BatchNormalization", "InstanceNormalization", "GroupNormalization",
    "LpNormalization", "RMSNormalization", "SimplifiedLayerNormalization", "SkipLayerNormalization",
    "SkipSimplifiedLayerNormalization", "EmbedLayerNormalization", "Attention", "MultiHeadAttention",
    "GroupQueryAttention", "PackedAttention", "RotaryEmbedding", "LSTM", "GRU", "RNN",
    "Gelu", "FastGelu", "BiasGelu", "QuickGelu", "BiasSoftmax", "FusedMatMul", "FusedConv",
    "MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv", "MatMulIntegerToFloat",
    "DynamicQuantizeMatMul", "MatMulNBits", "QAttention", "QGemm", "QuantizeLinear", "DequantizeLinear",
    "DynamicQuantizeLinear", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LRN",
})

# Ops through which an integer tensor keeps its values (token ids stay token ids).
_INDEX_PASSTHROUGH = frozenset({"Cast", "Unsqueeze", "Squeeze", "Reshape", "Identity", "Flatten", "Expand",
                                "Transpose", "Slice"})
# Ops between an initializer and a Gather's data input that keep the table's rows.
_TABLE_PASSTHROUGH = frozenset({"DequantizeLinear", "Cast", "Identity"})
# com.microsoft EmbedLayerNormalization: index input position -> table input position
_EMBED_LAYER_NORM_TABLES = {0: 2, 1: 4, 8: 3}

INTEGER_TYPES = frozenset({"int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8"})
_FLOAT_TYPES = frozenset({"float32", "float16", "float64", "bfloat16"})

Reason = Literal["shape-source", "from-shape", "feeds-shape"]


# --------------------------------------------------------------------------------------------------
# 1. Shape-only nodes
# --------------------------------------------------------------------------------------------------
@record
class ShapeOnlyNode:
    index: int  # position in the graph's node list
    name: str  # may be "" (some exporters leave nodes unnamed)
    op_type: str
    reason: Reason


def _is_onnx(node: GraphNode) -> bool:
    return node.domain in ("", "ai.onnx")


def _small_constants(graph: ModelGraph) -> set[str]:
    """Initializers and Constant-node values of at most :data:`SMALL_ELEMENTS` elements."""
    small = {name for name, info in graph.initializers.items()
             if info.elements is not None and info.elements <= SMALL_ELEMENTS}
    for node in graph.nodes:
        if node.op_type == "Constant" and _is_onnx(node) and node.constant is not None:
            count = node.constant.elements
            if count is not None and count <= SMALL_ELEMENTS:
                small.update(o for o in node.outputs if o)
    return small


def _consumers(graph: ModelGraph) -> dict[str, list[tuple[int, int]]]:
    uses: dict[str, list[tuple[int, int]]] = {}
    for node in graph.nodes:
        for slot, name in enumerate(node.inputs):
            if name:
                uses.setdefault(name, []).append((node.index, slot))
    return uses


def _shape_slots(node: GraphNode) -> frozenset[int]:
    return SHAPE_SLOTS.get(node.op_type, frozenset()) if _is_onnx(node) else frozenset()


def shape_only_nodes(graph: ModelGraph) -> tuple[ShapeOnlyNode, ...]:
    """The nodes of ``graph`` that only compute shapes, in graph order (see the module docstring)."""
    small = _small_constants(graph)
    large = {name for name in graph.initializers if name not in small}
    marked: dict[int, Reason] = {}
    shape_values: set[str] = set()

    # Forward: from Shape/Size through nodes that read nothing but shape values and small constants.
    for node in graph.nodes:
        if node.op_type in SHAPE_SOURCES and _is_onnx(node):
            marked[node.index] = "shape-source"
            shape_values.update(o for o in node.outputs if o)
            continue
        if node.op_type in HEAVY_OPS or node.op_type == "Constant":
            continue
        slots = _shape_slots(node)
        present = [(slot, name) for slot, name in enumerate(node.inputs) if name]
        reads_shape_as_data = any(name in shape_values and slot not in slots for slot, name in present)
        if reads_shape_as_data and all(name in shape_values or name in small for _, name in present):
            marked[node.index] = "from-shape"
            shape_values.update(o for o in node.outputs if o)

    # Backward: nodes whose every use is a shape-like input or a shape-only node (not Shape/Size itself).
    uses = _consumers(graph)
    graph_outputs = {o.name for o in graph.outputs}
    by_index = graph.nodes
    for node in reversed(graph.nodes):
        if node.index in marked or node.op_type in HEAVY_OPS:
            continue
        if any(name in large for name in node.inputs):
            continue
        outputs = [o for o in node.outputs if o]
        if not outputs or any(o in graph_outputs for o in outputs):
            continue
        node_uses = [u for o in outputs for u in uses.get(o, ())]
        if node_uses and all(_is_shape_use(by_index[i], slot, marked) for i, slot in node_uses):
            marked[node.index] = "feeds-shape"

    return tuple(ShapeOnlyNode(n.index, n.name, n.op_type, marked[n.index]) for n in graph.nodes
                 if n.index in marked)


def _is_shape_use(consumer: GraphNode, slot: int, marked: Mapping[int, Reason]) -> bool:
    if slot in _shape_slots(consumer):
        return True
    return consumer.index in marked and consumer.op_type not in SHAPE_SOURCES


def shape_only_names(graph: ModelGraph) -> frozenset[str]:
    """Names of the shape-only nodes (unnamed ones left out): what a placement report can match on."""
    return frozenset(n.name for n in shape_only_nodes(graph) if n.name)


# --------------------------------------------------------------------------------------------------
# 2. Embedding tables
# --------------------------------------------------------------------------------------------------
@record
class EmbeddingTable:
    input: str  # the graph input whose values index the table
    node: str  # the Gather (or EmbedLayerNormalization) node's name
    node_index: int
    table: str  # the initializer holding the table
    rows: int  # valid indices are 0 .. rows-1
    through: tuple[str, ...] = ()  # op types between the input and the node, input side first


def embedding_tables(graph: ModelGraph) -> dict[str, tuple[EmbeddingTable, ...]]:
    """Integer graph input -> the tables it indexes (a token input may feed several)."""
    producer = {o: n for n in graph.nodes for o in n.outputs if o}
    integer_inputs = {i.name for i in graph.inputs if i.dtype in INTEGER_TYPES}
    found: dict[str, list[EmbeddingTable]] = {}
    for node in graph.nodes:
        for index_slot, table_slot in _table_slots(node):
            if index_slot >= len(node.inputs) or table_slot >= len(node.inputs):
                continue
            table = table_initializer(node.inputs[table_slot], producer, graph.initializers)
            if table is None:
                continue
            name, info = table
            if not info.dims or not axis_is_rows(node, len(info.dims)):
                continue
            source, through = _index_source(node.inputs[index_slot], producer, integer_inputs)
            if source is not None:
                found.setdefault(source, []).append(
                    EmbeddingTable(source, node.name, node.index, name, info.dims[0], through))
    return {k: tuple(v) for k, v in found.items()}


def _table_slots(node: GraphNode) -> Iterable[tuple[int, int]]:
    if node.op_type == "Gather" and _is_onnx(node):
        return ((1, 0),)
    if node.op_type == "EmbedLayerNormalization" and node.domain == "com.microsoft":
        return tuple(_EMBED_LAYER_NORM_TABLES.items())
    return ()


def axis_is_rows(node: GraphNode, rank: int) -> bool:
    if node.op_type != "Gather":
        return True
    axis = node.int_attributes.get("axis", 0)
    return axis in (0, -rank)


def table_initializer(name: str, producer: Mapping[str, GraphNode],
                       initializers: Mapping[str, TensorInfo]) -> tuple[str, TensorInfo] | None:
    for _ in range(8):  # a short chain (DequantizeLinear, Cast) at most
        if name in initializers:
            return name, initializers[name]
        node = producer.get(name)
        if node is None:
            return None
        if node.op_type == "Constant" and node.constant is not None and node.constant.dims:
            return name, node.constant
        if node.op_type not in _TABLE_PASSTHROUGH or not node.inputs:
            return None
        name = node.inputs[0]
    return None


def _index_source(name: str, producer: Mapping[str, GraphNode],
                  inputs: set[str]) -> tuple[str | None, tuple[str, ...]]:
    through: list[str] = []
    seen: set[str] = set()
    while name not in inputs:
        node = producer.get(name)
        if node is None or name in seen or node.op_type not in _INDEX_PASSTHROUGH or not node.inputs:
            return None, ()
        seen.add(name)
        through.append(node.op_type)
        name = node.inputs[0]
    return name, tuple(reversed(through))


# --------------------------------------------------------------------------------------------------
# 3. Synthetic inputs
# --------------------------------------------------------------------------------------------------
Kind = Literal["token_ids", "token_type_ids", "position_ids", "attention_mask", "past_key_values", "image",
               "audio", "float", "integer", "bool"]
Values = Literal["randint", "normal", "uniform", "fill", "arange"]


@record
class Defaults:
    """The sizes chosen for dynamic axes."""

    batch: int = 1
    sequence: int = 16
    past: int = 0  # an empty key/value cache: the first step of generation
    image: int = 224
    audio_samples: int = 16000  # one second at 16 kHz
    audio_frames: int = 3000  # Whisper's 30 s of 10 ms frames (its encoder accepts exactly this)


@record
class SyntheticInput:
    """How to make one input: ``values`` says how, ``low``/``high`` bound random values (high excluded),
    ``fill`` is the constant for ``"fill"``, ``low`` the first position for ``"arange"`` (along the last axis)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    kind: Kind
    values: Values
    low: float | None = None
    high: float | None = None
    fill: float | None = None
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape), "kind": self.kind,
                "values": self.values, "low": self.low, "high": self.high, "fill": self.fill, "note": self.note}


@record
class SyntheticPlan:
    inputs: tuple[SyntheticInput, ...]
    dims: dict[str, int] = field(default_factory=dict)  # symbolic dimension -> the size chosen
    problems: tuple[str, ...] = ()  # inputs no valid value could be proposed for

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {"inputs": [i.to_json() for i in self.inputs], "dims": dict(self.dims),
                "problems": list(self.problems)}


# Defaults is a frozen @record (immutable, safe as a default), which ruff cannot tell from the decorator.
def propose_inputs(graph: ModelGraph, *, shapes: Mapping[str, Sequence[int]] | None = None,
                   defaults: Defaults = Defaults()) -> SyntheticPlan:  # noqa: B008
    """Valid synthetic inputs for every graph input; ``shapes`` (``--input-shape``) wins where given.

    A size given for one input also fixes its symbolic dimensions for the others (``input_ids=2x32``
    makes the attention mask 2x32 as well).
    """
    given = {k: tuple(int(d) for d in v) for k, v in (shapes or {}).items()}
    tables = embedding_tables(graph)
    symbols: dict[str, int] = {}
    for info in graph.inputs:  # symbols bound by the given shapes
        if info.name in given and info.shape is not None and len(info.shape) == len(given[info.name]):
            for dim, size in zip(info.shape, given[info.name], strict=True):
                if isinstance(dim, str) and not is_expression(dim):
                    symbols.setdefault(dim, size)
    sized: list[tuple[InputInfo, Kind, tuple[int, ...]]] = []
    problems: list[str] = []
    for info in graph.inputs:
        kind = _kind(info, tables)
        if info.dtype is None:
            problems.append(f"input {info.name!r} is not a tensor; no synthetic value can be made for it")
            continue
        if info.name in given:
            shape = given[info.name]
        elif info.shape is None:
            problems.append(f"input {info.name!r} declares no shape: give it with --input-shape")
            continue
        else:
            shape = tuple(_size(dim, pos, kind, info, symbols, defaults) for pos, dim in enumerate(info.shape))
        sized.append((info, kind, shape))
    # positions count from the cache's length: the past input's size, given or proposed
    past = next((shape[past_axis(info)] for info, kind, shape in sized
                 if kind == "past_key_values" and len(shape) > past_axis(info)), defaults.past)
    proposed = [_values(info, kind, shape, tables.get(info.name, ()), past) for info, kind, shape in sized]
    return SyntheticPlan(tuple(proposed), symbols, tuple(problems))


def _kind(info: InputInfo, tables: Mapping[str, Sequence[EmbeddingTable]]) -> Kind:
    name = info.name.lower()
    dtype = info.dtype or ""
    rank = len(info.shape) if info.shape is not None else None
    if "mask" in name:
        return "attention_mask"
    if dtype == "bool":
        return "bool"
    if dtype in INTEGER_TYPES:
        if "position" in name:
            return "position_ids"
        if "token_type" in name or "segment" in name:
            return "token_type_ids"
        if info.name in tables or "input_ids" in name or "token" in name:
            return "token_ids"
        return "integer"
    if dtype in _FLOAT_TYPES:
        if "past" in name or "cache" in name:
            return "past_key_values"
        if any(k in name for k in ("input_values", "audio", "wav", "speech", "input_features", "mel", "fbank")):
            return "audio"
        if rank == 4:
            return "image"
        return "float"
    return "integer"


_EXPRESSION = re.compile(r"[+\-*]")


def is_past_input(info: InputInfo) -> bool:
    """A key/value cache input (``past_key_values.0.key``, ``cache_...``): float, named so."""
    name = info.name.lower()
    return (info.dtype or "") in _FLOAT_TYPES and ("past" in name or "cache" in name)


def past_axis(info: InputInfo) -> int:
    """The cache-length axis of a past input: ``(batch, heads, past, head_dim)`` or ``(batch, past, hidden)``."""
    rank = len(info.shape or ())
    return rank - 2 if rank >= 3 else max(rank - 1, 0)


def is_expression(dim: str) -> bool:
    return bool(_EXPRESSION.search(dim))


def _symbol(dim: str, kind: Kind, defaults: Defaults, symbols: Mapping[str, int]) -> int | None:
    """The size a named dimension gets, from its name; None when the name says nothing."""
    if dim in symbols:
        return symbols[dim]
    s = dim.lower()
    if is_expression(s):
        return _expression(dim, kind, defaults, symbols)
    if "batch" in s:
        return defaults.batch
    if "past" in s or "cache" in s:
        return defaults.past
    if "total" in s and ("seq" in s or "len" in s):
        return defaults.past + defaults.sequence
    if "height" in s or "width" in s:
        return defaults.image
    if "channel" in s:
        return 3
    if "frame" in s:
        return defaults.audio_frames
    if kind == "audio" and ("sample" in s or "seq" in s or "len" in s):
        return defaults.audio_samples
    if any(k in s for k in ("seq", "len", "token", "step")):
        return defaults.sequence
    return None


def _expression(dim: str, kind: Kind, defaults: Defaults, symbols: Mapping[str, int]) -> int | None:
    """``"past_sequence_length + sequence_length"`` (Optimum's names): sums and differences of known terms."""
    if "*" in dim:
        return None
    total = 0
    for sign, term in re.findall(r"([+\-]?)\s*([^+\-\s]+)", dim):
        value = int(term) if term.isdigit() else _symbol(term, kind, defaults, symbols)
        if value is None:
            return None
        total += -value if sign == "-" else value
    return total


def _size(dim: int | str | None, pos: int, kind: Kind, info: InputInfo, symbols: dict[str, int],
          defaults: Defaults) -> int:
    if isinstance(dim, int) and dim >= 0:
        return dim
    if isinstance(dim, str):
        value = _symbol(dim, kind, defaults, symbols)
        if value is not None:
            if not is_expression(dim):
                symbols.setdefault(dim, value)
            return value
    value = _by_position(pos, kind, info, defaults)
    if isinstance(dim, str):
        symbols.setdefault(dim, value)
    return value


def _by_position(pos: int, kind: Kind, info: InputInfo, defaults: Defaults) -> int:
    """A dynamic dimension the name says nothing about: decide from where it sits in a known layout."""
    shape = info.shape or ()
    rank = len(shape)
    if pos == 0:
        return defaults.batch
    if kind == "image":
        channels_last = shape[-1] in (1, 3, 4) and shape[1] not in (1, 3, 4)
        if (pos == 1 and not channels_last) or (pos == 3 and channels_last):
            return 3
        return defaults.image
    if kind == "past_key_values":  # (batch, heads, past, head_dim) or (batch, past, hidden)
        return defaults.past if pos == rank - 2 else 1
    if kind == "audio":
        if rank == 2:
            return defaults.audio_samples
        return defaults.audio_frames if pos == rank - 1 else 80
    if kind == "attention_mask" and pos == rank - 1:
        return defaults.past + defaults.sequence
    if pos == 1:
        return defaults.sequence
    return 1


def _values(info: InputInfo, kind: Kind, shape: tuple[int, ...], tables: Sequence[EmbeddingTable],
            past: int) -> SyntheticInput:
    dtype = info.dtype or "float32"
    rows = min((t.rows for t in tables), default=None)
    table_note = (f"indexes {', '.join(sorted({t.table for t in tables}))} ({rows} rows)" if tables else "")
    if kind == "attention_mask":
        return SyntheticInput(info.name, dtype, shape, kind, "fill", fill=1, note="every position attended")
    if kind == "bool":
        return SyntheticInput(info.name, dtype, shape, kind, "fill", fill=0,
                              note="False: the first step (no cache branch)")
    if kind == "position_ids":  # whether they fit the table: shape_limits.shape_problems
        return SyntheticInput(info.name, dtype, shape, kind, "arange", low=past,
                              note=table_note or "positions after the cache")
    if kind in ("token_ids", "token_type_ids"):
        if rows is None:
            high = 4 if kind == "token_ids" else 1
            note = "no embedding table found: small ids" if kind == "token_ids" else "no table found: zeros"
            return SyntheticInput(info.name, dtype, shape, kind, "randint", low=0, high=high, note=note)
        return SyntheticInput(info.name, dtype, shape, kind, "randint", low=0, high=rows, note=table_note)
    if kind == "integer":
        if rows is not None:
            return SyntheticInput(info.name, dtype, shape, kind, "randint", low=0, high=rows, note=table_note)
        return SyntheticInput(info.name, dtype, shape, kind, "randint", low=0, high=4,
                              note="a guess: small non-negative integers")
    if kind == "past_key_values":
        return SyntheticInput(info.name, dtype, shape, kind, "normal",
                              note="an empty cache" if 0 in shape else "random cache entries")
    if kind == "audio":
        return SyntheticInput(info.name, dtype, shape, kind, "uniform", low=-1.0, high=1.0,
                              note="a waveform / features in [-1, 1)")
    return SyntheticInput(info.name, dtype, shape, kind, "normal",
                          note="standard normal" + (" pixels" if kind == "image" else ""))


__all__ = [
    "HEAVY_OPS",
    "INTEGER_TYPES",
    "SHAPE_SLOTS",
    "SMALL_ELEMENTS",
    "Defaults",
    "EmbeddingTable",
    "ShapeOnlyNode",
    "SyntheticInput",
    "SyntheticPlan",
    "axis_is_rows",
    "embedding_tables",
    "is_expression",
    "is_past_input",
    "past_axis",
    "propose_inputs",
    "shape_only_names",
    "shape_only_nodes",
    "table_initializer",
]

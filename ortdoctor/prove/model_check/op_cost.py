"""How much a node costs when it runs on the CPU instead of the GPU: a ranking, not a measurement.

No shapes of activations are known before a run, so FLOPs cannot be counted. Two things are known from
the file alone and order nodes well enough to say which CPU-placed node to fix first:

1. **The op class.** Matrix products and convolutions (MatMul, Gemm, Conv, Einsum, the RNNs) do
   O(n·k) work per output element; attention kernels contain several of them; normalisations,
   softmax, pooling and reductions read every element a few times; element-wise math reads it once;
   data movement (Transpose, Reshape, Gather, Concat, Cast ...) does no arithmetic at all.
2. **The weights the node reads.** For the heavy classes the multiply-adds per token (or pixel) are the
   number of weight elements: a MatMul against a 768x3072 initializer costs 2.4 M MACs per token. So
   within a class, nodes are ordered by the elements of the initializers they read.

:func:`rank` sorts by class first, then weights, then graph order. Pure: no numpy, no onnxruntime.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from ortdoctor.prove.model_check.graph import GraphNode, ModelGraph

OpClass = Literal["matmul", "attention", "normalisation", "elementwise", "data", "other"]

#: Rank of each class: higher costs more. "other" (an op this table does not know, custom ops
#: included) sits with normalisation: it is compute until shown otherwise.
TIER: Mapping[OpClass, int] = {"matmul": 5, "attention": 4, "normalisation": 3, "other": 3,
                               "elementwise": 2, "data": 1}

_CLASSES: Mapping[OpClass, frozenset[str]] = {
    "matmul": frozenset({
        "MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum", "FusedMatMul", "FusedConv", "FusedGemm",
        "MatMulNBits", "MatMulBnb4", "GatherBlockQuantized", "LSTM", "GRU", "RNN", "DeformConv",
        "NhwcConv", "QOrderedMatMul", "GemmFastGelu", "GemmFloat8",
    }),
    "attention": frozenset({
        "Attention", "MultiHeadAttention", "GroupQueryAttention", "PackedAttention", "PackedMultiHeadAttention",
        "DecoderMaskedMultiHeadAttention", "DecoderMaskedSelfAttention", "DecoderAttention", "LongformerAttention",
        "SparseAttention", "RotaryEmbedding", "RelativePositionBias", "GatedRelativePositionBias",
    }),
    "normalisation": frozenset({
        "LayerNormalization", "SkipLayerNormalization", "SimplifiedLayerNormalization",
        "SkipSimplifiedLayerNormalization", "RMSNormalization", "BatchNormalization", "InstanceNormalization",
        "GroupNormalization", "GroupNorm", "SkipGroupNorm", "LpNormalization", "LRN", "MeanVarianceNormalization",
        "EmbedLayerNormalization", "Softmax", "LogSoftmax", "BiasSoftmax", "MaxPool", "AveragePool",
        "GlobalAveragePool", "GlobalMaxPool", "LpPool", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
        "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "TopK",
        "CumSum", "ArgMax", "ArgMin", "Resize", "Upsample", "GridSample", "RoiAlign", "NonMaxSuppression",
        "DFT", "STFT",
    }),
    "elementwise": frozenset({
        "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Exp", "Log", "Erf", "Tanh", "Sigmoid", "Relu", "LeakyRelu",
        "PRelu", "Elu", "Selu", "Celu", "Gelu", "FastGelu", "BiasGelu", "QuickGelu", "HardSigmoid", "HardSwish",
        "Softplus", "Softsign", "Mish", "Clip", "Min", "Max", "Mean", "Sum", "Neg", "Abs", "Reciprocal", "Floor",
        "Ceil", "Round", "Sign", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh",
        "Atanh", "Mod", "BitShift", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or",
        "Xor", "Not", "IsNaN", "IsInf", "BiasAdd", "BiasDropout", "Dropout", "ThresholdedRelu", "Shrink",
        "BiasSplitGelu", "Trilu",
    }),
    "data": frozenset({
        "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice", "Gather",
        "GatherElements", "GatherND", "Scatter", "ScatterElements", "ScatterND", "Expand", "Tile", "Pad", "Cast",
        "CastLike", "Identity", "Where", "Shape", "Size", "ConstantOfShape", "Range", "NonZero", "DepthToSpace",
        "SpaceToDepth", "OneHot", "Compress", "ReverseSequence", "EyeLike", "Constant", "SequenceAt",
        "SequenceConstruct", "SplitToSequence", "ConcatFromSequence", "SequenceInsert", "SequenceLength",
        "Optional", "OptionalGetElement", "OptionalHasElement", "MemcpyToHost", "MemcpyFromHost",
    }),
}
_BY_OP: dict[str, OpClass] = {op: cls for cls, ops in _CLASSES.items() for op in ops}

#: Words a report uses for each class.
LABEL: Mapping[OpClass, str] = {
    "matmul": "matrix product / convolution", "attention": "attention", "normalisation":
    "normalisation / softmax / pooling / reduction", "elementwise": "element-wise math",
    "data": "data movement", "other": "op of unknown cost",
}

#: Initializers up to this many elements are constants (axes, scales, epsilons), not weights.
_WEIGHT_MIN_ELEMENTS = 100


def op_class(op_type: str) -> OpClass:
    return _BY_OP.get(op_type, "other")


@dataclass(frozen=True)
class Cost:
    """A node's place in the ranking: its class, the weight elements it reads, its graph position."""

    name: str
    op_type: str
    op_class: OpClass
    weight_elements: int  # elements of the (non-constant) initializers the node reads; 0 when none or unknown
    index: int  # position in the file's graph; large for nodes onnxruntime created (fusions)

    @property
    def tier(self) -> int:
        return TIER[self.op_class]

    @property
    def arithmetic(self) -> bool:
        """Does real work on values (everything but data movement)."""
        return self.op_class != "data"

    def key(self) -> tuple[int, int, int, str]:
        return (-self.tier, -self.weight_elements, self.index, self.name)


def weight_elements(node: GraphNode, graph: ModelGraph) -> int:
    total = 0
    for name in node.inputs:
        info = graph.initializers.get(name)
        count = info.elements if info is not None else None
        if count is not None and count > _WEIGHT_MIN_ELEMENTS:
            total += count
    return total


def costs(nodes: Iterable[Mapping[str, str]], graph: ModelGraph | None) -> list[Cost]:
    """The cost of each ``{"op_type", "name"}`` (onnxruntime's placement records), most expensive first.

    A node is looked up in the file's graph by name; a node onnxruntime created (a fusion, a Memcpy)
    is not there and is ranked by its op class alone.
    """
    by_name = {n.name: n for n in graph.nodes if n.name} if graph is not None else {}
    out: list[Cost] = []
    for record in nodes:
        name = record.get("name") or ""
        op = record["op_type"]
        node = by_name.get(name)
        weights = weight_elements(node, graph) if node is not None and graph is not None else 0
        index = node.index if node is not None else 1 << 30
        out.append(Cost(name, op, op_class(op), weights, index))
    return sorted(out, key=Cost.key)


RANKING_RULE = ("ranked by op class (matrix products and convolutions, then attention, normalisation and "
                "pooling, element-wise math, data movement), then by the weight elements each node reads "
                "from initializers (its multiply-adds per token or pixel)")


__all__ = ["LABEL", "RANKING_RULE", "TIER", "Cost", "OpClass", "costs", "op_class", "weight_elements"]

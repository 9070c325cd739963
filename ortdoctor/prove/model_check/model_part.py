"""The bounded part of a large model that ``check --model`` compares: its first blocks, as a model of its own.

A multi-GB decoder cannot be given a whole CPU reference cheaply: the CPU EP holds every weight in host
memory (a float16 model's twice over, once its casts to float32 are folded) and spends CPU time that grows
with the model. The part is the graph's first nodes, cut where the fewest tensors cross to the rest (a
block boundary: the residual stream, plus what every block reads, such as the attention mask), holding at
most a budget of the weights. Both the CPU EP and the EP under test run that part and its outputs are
compared; the whole model still runs on the EP under test.

Two halves:

- :func:`choose_prefix` (pure, in the parent): where to cut, from the file's graph (:class:`~.graph.ModelGraph`).
- :func:`prefix_model_bytes` (in the child): the part as a serialized ``ModelProto``. It copies the bytes
  of the file's own messages (the opsets, the first nodes, the initializers they read, the inputs they
  use) and names the cut tensors as outputs; external data stays where it is, referenced by the same
  relative locations: onnxruntime finds it through the session option
  :data:`EXTERNAL_FOLDER_KEY`, so nothing is written anywhere and no weight passes through Python.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from ortdoctor.core.record import record
from ortdoctor.prove.model_check.graph import ModelGraph
from ortdoctor.prove.model_check.inspect import _LEN, _VARINT, DATA_TYPES, _fields, _Source, _text

#: onnxruntime's session option for the folder that holds the external data of a model loaded from bytes
#: (``kOrtSessionOptionsModelExternalInitializersFileFolderPath``)
EXTERNAL_FOLDER_KEY = "session.model_external_initializers_file_folder_path"
#: the ops whose presence in the part means arithmetic was compared, not only an embedding lookup
_COMPUTE_OPS = frozenset({"MatMul", "Gemm", "Conv", "Attention", "MultiHeadAttention", "GroupQueryAttention",
                          "MatMulNBits", "FusedMatMul", "ConvTranspose", "Einsum"})
#: more cut tensors than this is not a block boundary
_MAX_OUTPUTS = 16
_BYTES = dict(DATA_TYPES.values())


@record
class PrefixCut:
    nodes: int  # the part is the graph's first `nodes` nodes
    of_nodes: int
    last_node: str  # the name (or op type) of the part's last node
    outputs: tuple[str, ...]  # the tensors that cross the cut: the part's outputs
    weight_bytes: int  # bytes of the initializers the part reads
    total_weight_bytes: int

    def describe(self) -> str:
        share = 100 * self.weight_bytes / self.total_weight_bytes if self.total_weight_bytes else 100.0
        return (f"the first {self.nodes} of {self.of_nodes} nodes (through {self.last_node}; "
                f"{self.weight_bytes / 2**20:.0f} MiB of the weights, {share:.0f}%), cut at "
                f"{len(self.outputs)} tensor(s): {', '.join(self.outputs[:4])}{' ...' if len(self.outputs) > 4 else ''}")

    def to_json(self) -> dict[str, Any]:
        return {"kind": "first-nodes", "nodes": self.nodes, "of_nodes": self.of_nodes, "last_node": self.last_node,
                "outputs": list(self.outputs), "weight_bytes": self.weight_bytes,
                "total_weight_bytes": self.total_weight_bytes}


def initializer_bytes(graph: ModelGraph, name: str) -> int:
    info = graph.initializers.get(name)
    if info is None or info.elements is None:
        return 0
    return int(info.elements * _BYTES.get(info.dtype or "", 4))


def choose_prefix(graph: ModelGraph, budget_bytes: int) -> PrefixCut | None:
    """The latest cut whose part reads at most ``budget_bytes`` of weights, has at least one compute node
    (MatMul, Gemm, Conv ...) and crosses the fewest tensors (Constant nodes' outputs aside) of all such cuts; None when there is none (the
    first block alone is over the budget, or the graph has no compute). Nodes are taken in file order:
    ONNX requires a topological one."""
    nodes = graph.nodes
    n = len(nodes)
    if n < 2:
        return None
    last_use: dict[str, int] = {}
    first_use: dict[str, int] = {}
    for i, node in enumerate(nodes):
        for x in node.inputs:
            if x:
                last_use[x] = i
                first_use.setdefault(x, i)
    for graph_output in graph.outputs:
        last_use[graph_output.name] = n  # read after every node
    expiring: dict[int, list[str]] = {}
    weights_at: dict[int, int] = {}
    for name in graph.initializers:
        if name in first_use:
            weights_at[first_use[name]] = weights_at.get(first_use[name], 0) + initializer_bytes(graph, name)
    total = sum(initializer_bytes(graph, name) for name in graph.initializers)
    # a Constant node's output that every block reads (an exporter without constant folding writes them)
    # crosses every cut alike: it is an output of the part but does not count against a cut
    constants = {out for node in nodes if node.op_type == "Constant" for out in node.outputs}
    live: set[str] = set()
    cost = 0  # the live tensors that are not constants
    weights = 0
    computed = False
    best: tuple[int, int] | None = None  # (frontier size, position)
    for i, node in enumerate(nodes[:-1]):
        weights += weights_at.get(i, 0)
        if weights > budget_bytes:
            break
        computed = computed or node.op_type in _COMPUTE_OPS
        for out in node.outputs:
            end = last_use.get(out, -1)
            if out and end > i and out not in live:
                live.add(out)
                cost += out not in constants
                expiring.setdefault(end, []).append(out)
        for gone in expiring.pop(i, ()):
            if gone in live:
                live.discard(gone)
                cost -= gone not in constants
        if computed and cost and len(live) <= _MAX_OUTPUTS and (best is None or cost <= best[0]):
            best = (cost, i)
    if best is None:
        return None
    at = best[1]
    crossing = _crossing(nodes, at, last_use)
    part_weights = sum(w for i, w in weights_at.items() if i <= at)
    last = nodes[at].name or nodes[at].op_type
    return PrefixCut(at + 1, n, last, tuple(crossing), part_weights, total)


def _crossing(nodes: Sequence[Any], at: int, last_use: dict[str, int]) -> list[str]:
    """The tensors made by nodes ``[0, at]`` and read after ``at``, in the order they were made."""
    return [out for node in nodes[: at + 1] for out in node.outputs if out and last_use.get(out, -1) > at]


# --------------------------------------------------------------------------------------------------
# The part as bytes (in the child)
# --------------------------------------------------------------------------------------------------
# onnx.proto field numbers
_MODEL_GRAPH, _MODEL_DOC, _MODEL_TRAINING = 7, 6, 20
_GRAPH_NODE, _GRAPH_NAME, _GRAPH_INIT, _GRAPH_INPUT, _GRAPH_OUTPUT, _GRAPH_VALUE_INFO = 1, 2, 5, 11, 12, 13
_NODE_INPUT, _NODE_OUTPUT = 1, 2
_TENSOR_NAME = 8
_VALUE_INFO_NAME = 1


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _len_field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | _LEN) + _varint(len(payload)) + payload


def _name_of(src: _Source, span: tuple[int, int], field_number: int) -> str | None:
    for number, wire, value in _fields(src, *span):
        if number == field_number and wire == _LEN:
            return _text(src, value)
    return None


def _strings(src: _Source, span: tuple[int, int], field_number: int) -> Iterable[str]:
    for number, wire, value in _fields(src, *span):
        if number == field_number and wire == _LEN:
            yield _text(src, value)


def prefix_model_bytes(path: str, nodes: int, outputs: Sequence[str]) -> bytes:
    """The model at ``path`` cut after its first ``nodes`` nodes, with ``outputs`` as its outputs (see the
    module docstring). Raises ``ValueError`` when the file does not hold what the cut needs."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        src = _Source(fh.fileno(), size)

        def raw(span: tuple[int, int]) -> bytes:
            return src.read(span[0], span[1], need=span[1] - span[0])

        head: list[bytes] = []
        graph_span: tuple[int, int] | None = None
        for number, wire, value in _fields(src, 0, size):
            if number == _MODEL_GRAPH and wire == _LEN:
                graph_span = value
            elif number in (_MODEL_DOC, _MODEL_TRAINING):
                continue  # text and training state the part does not need
            elif wire == _VARINT:
                head.append(_varint(number << 3 | _VARINT) + _varint(value))
            elif wire == _LEN:
                head.append(_len_field(number, raw(value)))
        if graph_span is None:
            raise ValueError("the file has no graph")
        node_spans: list[tuple[int, int]] = []
        inits: list[tuple[str | None, tuple[int, int]]] = []
        inputs: list[tuple[str | None, tuple[int, int]]] = []
        infos: dict[str, tuple[int, int]] = {}
        name = b""
        for number, wire, value in _fields(src, *graph_span):
            if wire != _LEN:
                continue
            if number == _GRAPH_NODE and len(node_spans) < nodes:
                node_spans.append(value)
            elif number == _GRAPH_NAME:
                name = raw(value)
            elif number == _GRAPH_INIT:
                inits.append((_name_of(src, value, _TENSOR_NAME), value))
            elif number == _GRAPH_INPUT:
                inputs.append((_name_of(src, value, _VALUE_INFO_NAME), value))
            elif number == _GRAPH_VALUE_INFO:
                info_name = _name_of(src, value, _VALUE_INFO_NAME)
                if info_name is not None:
                    infos[info_name] = value
        if len(node_spans) < nodes:
            raise ValueError(f"the graph has {len(node_spans)} nodes, not {nodes}")
        used = {x for span in node_spans for x in _strings(src, span, _NODE_INPUT) if x}
        made = {x for span in node_spans for x in _strings(src, span, _NODE_OUTPUT) if x}
        graph = [_len_field(_GRAPH_NAME, name + b"_part")]
        graph += [_len_field(_GRAPH_NODE, raw(span)) for span in node_spans]
        graph += [_len_field(_GRAPH_INIT, raw(span)) for n, span in inits if n in used]
        graph += [_len_field(_GRAPH_INPUT, raw(span)) for n, span in inputs if n in used]
        for out in outputs:  # typed where the file says the type, else by name: onnxruntime infers it
            info = infos.get(out)
            graph.append(_len_field(_GRAPH_OUTPUT, raw(info) if info is not None
                                    else _len_field(_VALUE_INFO_NAME, out.encode())))
        graph += [_len_field(_GRAPH_VALUE_INFO, raw(span)) for n, span in infos.items()
                  if n in made and n not in outputs]
    return b"".join(head) + _len_field(_MODEL_GRAPH, b"".join(graph))


__all__ = ["EXTERNAL_FOLDER_KEY", "PrefixCut", "choose_prefix", "initializer_bytes", "prefix_model_bytes"]

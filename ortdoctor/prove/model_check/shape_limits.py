"""The shapes a model can run at, read from its graph: checked before any shape set is run or advised.

A shape set (one size per input dimension) that the graph cannot run makes onnxruntime fail inside the
session ("indices element out of data bounds", a broadcast error), or worse, gets printed as a TensorRT
profile that fails later. The file says enough to refuse such a set up front:

- **static dimensions**: a fixed size in an input's declared shape, and its rank;
- **shared symbols and their arithmetic**: a symbol names one size for every input that uses it, and an
  expression such as Optimum's ``past_sequence_length + sequence_length`` is the sum of its terms;
- **position tables**: a ``Gather`` on a table of N rows (axis 0) indexed by positions. The positions are
  either an input (``position_ids``: a decoder with a key/value cache counts them from the cache length,
  so ``past + sequence <= N``) or computed from an input's length (BERT's ``Slice`` of a stored ``arange``
  of ``Shape(input_ids)[1]`` positions, or a ``Range``): then ``sequence (+ past) <= N``, and a stored
  position buffer shorter than the table bounds it too (``Slice`` stops at its end, and the sum that
  follows fails to broadcast).

Pure functions over :class:`~ortdoctor.prove.model_check.graph.ModelGraph`; no numpy, no onnxruntime.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ortdoctor.core.record import record
from ortdoctor.prove.model_check.graph import GraphNode, InputInfo, ModelGraph
from ortdoctor.prove.model_check.shape_subgraph import (
    INTEGER_TYPES,
    axis_is_rows,
    is_expression,
    is_past_input,
    past_axis,
    table_initializer,
)

#: Ops a position index passes through on its way from a stored buffer or a Range to the Gather.
_POSITION_PATH = frozenset({"Slice", "Range", "Cast", "Unsqueeze", "Squeeze", "Reshape", "Expand", "Identity",
                            "Add", "Sub", "Concat", "Gather", "Shape", "Flatten", "Transpose", "Tile"})
_MAX_DEPTH = 16  # the longest index chain seen in an export (Slice <- Unsqueeze <- Gather <- Shape) is ~6


@record
class PositionLimit:
    """``sum(length of each counted axis) <= rows``: the positions a table can be indexed with."""

    table: str  # the initializer (or the position buffer) that bounds the positions
    rows: int
    node: str  # the Gather's name
    counted: tuple[tuple[str, int], ...]  # (input, axis) whose sizes add up to the largest position + 1

    def describe(self) -> str:
        axes = " + ".join(f"{name}[{axis}]" for name, axis in self.counted)
        return f"{axes} <= {self.rows} (the {self.rows}-row position table {self.table}, Gather {self.node or '(unnamed)'})"


def position_limits(graph: ModelGraph) -> tuple[PositionLimit, ...]:
    """Every position table of ``graph`` and the input axes its positions count."""
    producer = {o: n for n in graph.nodes for o in n.outputs if o}
    inputs = {i.name: i for i in graph.inputs}
    pasts = [i for i in graph.inputs if is_past_input(i)]
    out: list[PositionLimit] = []
    for node in graph.nodes:
        if node.op_type != "Gather" or node.domain not in ("", "ai.onnx") or len(node.inputs) < 2:
            continue
        table = table_initializer(node.inputs[0], producer, graph.initializers)
        if table is None or not table[1].dims or len(table[1].dims) != 2 or not axis_is_rows(node, 2):
            continue
        name, info = table
        assert info.dims is not None
        rows = info.dims[0]
        source = _direct_input(node.inputs[1], producer, inputs)
        if source is not None:
            if "position" not in source.name.lower() or not source.shape:
                continue  # token ids and token types index by value, not by position
            counted = [(source.name, len(source.shape) - 1)]
            counted += [(p.name, past_axis(p)) for p in pasts[:1]]  # positions start after the cache
            out.append(PositionLimit(name, rows, node.name, tuple(counted)))
            continue
        found = _computed_positions(node.inputs[1], producer, inputs, graph)
        if found is None:
            continue
        counted, buffers = found
        limit_rows, limit_table = rows, name
        for buffer_name, length in buffers:
            if length < limit_rows:
                limit_rows, limit_table = length, buffer_name
        out.append(PositionLimit(limit_table, limit_rows, node.name, tuple(counted)))
    return tuple(out)


def _direct_input(name: str, producer: Mapping[str, GraphNode], inputs: Mapping[str, InputInfo]) -> InputInfo | None:
    """The integer graph input whose values reach the Gather unchanged (Cast/Unsqueeze/Reshape ...)."""
    for _ in range(_MAX_DEPTH):
        if name in inputs:
            info = inputs[name]
            return info if info.dtype in INTEGER_TYPES else None
        node = producer.get(name)
        if node is None or node.op_type not in ("Cast", "Unsqueeze", "Squeeze", "Reshape", "Identity", "Flatten",
                                                "Expand") or not node.inputs:
            return None
        name = node.inputs[0]
    return None


def _computed_positions(name: str, producer: Mapping[str, GraphNode], inputs: Mapping[str, InputInfo],
                        graph: ModelGraph) -> tuple[list[tuple[str, int]], list[tuple[str, int]]] | None:
    """Positions computed from input lengths: the (input, axis) pairs measured by a Shape on the way, and
    the stored position buffers sliced (name, length of their last axis). None when the index is not
    built from lengths only (it reads an input's values, or an op that is not a position computation)."""
    counted: list[tuple[str, int]] = []
    buffers: list[tuple[str, int]] = []
    stack = [(name, 0)]
    seen: set[str] = set()
    while stack:
        tensor, depth = stack.pop()
        if tensor in seen or not tensor:
            continue
        seen.add(tensor)
        if tensor in inputs:
            return None  # an input's values, not its length
        if tensor in graph.initializers:
            continue
        node = producer.get(tensor)
        if node is None or depth > _MAX_DEPTH or (node.op_type not in _POSITION_PATH and node.op_type != "Constant"):
            return None
        if node.op_type == "Constant":
            continue
        if node.op_type == "Shape":
            source = inputs.get(node.inputs[0]) if node.inputs else None
            if source is None or not source.shape:
                return None  # the shape of an intermediate tensor: not traced
            counted.append((source.name, _measured_axis(node, source)))
            continue
        if node.op_type == "Slice" and node.inputs:
            data = node.inputs[0]
            buffer = graph.initializers.get(data) or (
                producer[data].constant if data in producer and producer[data].op_type == "Constant" else None)
            dims = buffer.dims if buffer is not None else None
            if dims:
                buffers.append((data, dims[-1]))
        stack.extend((i, depth + 1) for i in node.inputs)
    if not counted:
        return None
    unique = list(dict.fromkeys(counted))
    by_role: dict[str, tuple[str, int]] = {}
    for name_axis in unique:  # the same length measured on two inputs (input_ids, token_type_ids) counts once
        info = inputs[name_axis[0]]
        by_role.setdefault("past" if is_past_input(info) else "sequence", name_axis)
    return list(by_role.values()), buffers


def _measured_axis(node: GraphNode, source: InputInfo) -> int:
    """The axis a Shape node measures: its ``start`` (opset 15) when it takes one axis, else the sequence
    axis (1 for ``[batch, sequence]`` inputs; the cache axis of a past input): the index of a
    ``Gather(Shape(x), k)`` is a Constant whose value the file's reader does not keep."""
    rank = len(source.shape or ())
    start = node.int_attributes.get("start")
    if start is not None:
        return start % rank if rank else start
    if is_past_input(source):
        return past_axis(source)
    return 1 if rank >= 2 else 0


_TERM = re.compile(r"([+\-]?)\s*([^+\-\s]+)")


def shape_problems(graph: ModelGraph, shapes: Mapping[str, Sequence[int]],
                   limits: Sequence[PositionLimit] | None = None) -> list[str]:
    """Why the shape set ``shapes`` (input name -> sizes) cannot run on ``graph``; empty when it can.

    Inputs missing from ``shapes`` are not judged. ``limits`` saves recomputing :func:`position_limits`.
    """
    problems: list[str] = []
    symbols: dict[str, tuple[int, str]] = {}  # symbol -> (size, the input that set it)
    declared = {i.name: i for i in graph.inputs}
    for name, sizes in shapes.items():
        info = declared.get(name)
        if info is None or info.shape is None:
            continue
        sizes = tuple(sizes)
        if len(sizes) != len(info.shape):
            problems.append(f"{name} has {len(info.shape)} dimensions ({_declared(info)}), not {len(sizes)}")
            continue
        for axis, (dim, size) in enumerate(zip(info.shape, sizes, strict=True)):
            if isinstance(dim, int) and dim >= 0 and size != dim:
                problems.append(f"{name}[{axis}] is fixed at {dim} in the model ({_declared(info)}), not {size}")
            elif isinstance(dim, str) and not is_expression(dim):
                seen = symbols.setdefault(dim, (size, name))
                if seen[0] != size:
                    problems.append(f"{name}[{axis}] is {dim!r}, which {seen[1]} sets to {seen[0]}, not {size}")
    for name, sizes in shapes.items():  # expressions, once every plain symbol is bound
        info = declared.get(name)
        if info is None or info.shape is None or len(tuple(sizes)) != len(info.shape):
            continue
        for axis, (dim, size) in enumerate(zip(info.shape, tuple(sizes), strict=True)):
            if isinstance(dim, str) and is_expression(dim):
                value = _evaluate(dim, symbols)
                if value is not None and value != size:
                    problems.append(f"{name}[{axis}] is {dim!r} = {value} for these shapes, not {size}")
    for limit in position_limits(graph) if limits is None else limits:
        if any(n not in shapes or axis >= len(tuple(shapes[n])) for n, axis in limit.counted):
            continue
        total = sum(tuple(shapes[n])[axis] for n, axis in limit.counted)
        if total > limit.rows:
            parts = " + ".join(f"{n}[{axis}] {tuple(shapes[n])[axis]}" for n, axis in limit.counted)
            problems.append(f"positions up to {total - 1} ({parts}) do not fit the {limit.rows}-row position "
                            f"table {limit.table} (Gather {limit.node or '(unnamed)'}): at most {limit.rows} "
                            "positions")
    return problems


def _evaluate(expression: str, symbols: Mapping[str, tuple[int, str]]) -> int | None:
    total = 0
    for sign, term in _TERM.findall(expression):
        if term.isdigit():
            value = int(term)
        elif term in symbols:
            value = symbols[term][0]
        else:
            return None
        total += -value if sign == "-" else value
    return total


def _declared(info: InputInfo) -> str:
    return "x".join(str(d) if d is not None else "?" for d in info.shape or ())


__all__ = ["PositionLimit", "position_limits", "shape_problems"]

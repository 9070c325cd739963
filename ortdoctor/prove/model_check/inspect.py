"""Read what an ONNX model file says about itself, without onnxruntime and without the ``onnx`` package.

The parent process of ``ortdoctor check`` never imports onnxruntime, yet a model's header answers half of
"why not on the GPU?" before any session exists: the opsets it imports, the inputs whose dimensions are
symbolic (they rule out CUDA graphs), the control-flow ops (If/Loop/Scan, also inside subgraphs), the
quantized ops, how many bytes of weights it carries and whether the external data files it points at
exist at all.

The reader below walks the protobuf wire format directly, reading with ``pread`` only the spans it parses
(into private copies, never a memory map a writer could shrink under it): length-delimited fields that
are not needed (raw tensor data, doc strings) are skipped by their length and never read, so a model of
several gigabytes costs a few small reads per initializer. External data files are only looked at
(``stat``), never read. Field numbers come from ``onnx/onnx.proto``.

A file that is not a model, or stops in the middle of a field, becomes a :class:`ModelInspection` with
``problem`` set (``"invalid"``, ``"truncated"``, ``"unreadable"``), never an exception.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ortdoctor.core.record import record
from ortdoctor.prove.model_check.graph import GraphNode, InputInfo, ModelGraph, TensorInfo
from ortdoctor.prove.model_check.shape_subgraph import shape_only_names

Problem = Literal["unreadable", "invalid", "truncated"]

#: ONNX TensorProto.DataType -> (name used in reports, bytes per element; 0 when variable-sized)
DATA_TYPES: dict[int, tuple[str, float]] = {
    1: ("float32", 4), 2: ("uint8", 1), 3: ("int8", 1), 4: ("uint16", 2), 5: ("int16", 2),
    6: ("int32", 4), 7: ("int64", 8), 8: ("string", 0), 9: ("bool", 1), 10: ("float16", 2),
    11: ("float64", 8), 12: ("uint32", 4), 13: ("uint64", 8), 14: ("complex64", 8),
    15: ("complex128", 16), 16: ("bfloat16", 2), 17: ("float8e4m3fn", 1), 18: ("float8e4m3fnuz", 1),
    19: ("float8e5m2", 1), 20: ("float8e5m2fnuz", 1), 21: ("uint4", 0.5), 22: ("int4", 0.5),
    23: ("float4e2m1", 0.5),
}

CONTROL_FLOW_OPS = frozenset({"If", "Loop", "Scan"})

#: Ops that dynamic (and most static) quantization produces. The CUDA EP has no kernel for most of them, or
#: only for some type combinations, so onnxruntime places them on the CPU.
QUANTIZED_OPS = frozenset({
    "MatMulInteger", "ConvInteger", "DynamicQuantizeLinear", "DynamicQuantizeMatMul",
    "MatMulIntegerToFloat", "QLinearMatMul", "QLinearConv", "QLinearAdd", "QLinearMul",
    "QLinearSigmoid", "QLinearLeakyRelu", "QLinearAveragePool", "QLinearGlobalAveragePool",
    "QLinearConcat", "QLinearSoftmax", "QAttention", "DynamicQuantizeLSTM", "QGemm", "QEmbedLayerNormalization",
})

# onnx.proto wire types
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
_MAX_NESTING = 64  # subgraphs nest (If inside Loop inside Scan ...); beyond this the file is hostile


class _Truncated(Exception):
    """A field runs past the end of its enclosing message."""


class _Malformed(Exception):
    """Bytes that no protobuf encoder writes (bad wire type, field number 0, overlong varint)."""


# --------------------------------------------------------------------------------------------------
# Result types
# --------------------------------------------------------------------------------------------------
@record
class ExternalRef:
    tensor: str
    location: str  # as written in the model (relative to the model's directory)
    path: str  # resolved absolute path
    exists: bool
    length: int | None = None  # bytes the tensor takes, when the model says so
    problem: str | None = None  # "outside the model directory", "file shorter than offset+length"


@record
class ModelInspection:
    path: str
    file_bytes: int = 0
    problem: Problem | None = None
    problem_detail: str | None = None
    ir_version: int | None = None
    producer: str | None = None  # "pytorch 2.5.0"
    opsets: dict[str, int] = field(default_factory=dict)  # domain ("" = ai.onnx) -> version
    graph_name: str | None = None
    inputs: tuple[InputInfo, ...] = ()
    outputs: tuple[str, ...] = ()
    node_count: int = 0  # top-level graph only
    node_count_all: int = 0  # including subgraphs and local functions
    op_types: dict[str, int] = field(default_factory=dict)  # everywhere, subgraphs included
    subgraph_op_types: dict[str, int] = field(default_factory=dict)  # only those inside subgraphs
    control_flow_nodes: tuple[str, ...] = ()  # "Loop (loop_0)"
    # names of the top-level nodes that only compute shapes (shape_subgraph.shape_only_names), graph order
    shape_nodes: tuple[str, ...] = ()
    initializer_count: int = 0
    initializer_bytes: int = 0  # inline plus external
    external_bytes: int = 0
    external_refs: tuple[ExternalRef, ...] = ()
    graph: ModelGraph | None = field(default=None, repr=False, compare=False)  # top-level graph structure

    @property
    def ok(self) -> bool:
        return self.problem is None

    @property
    def total_bytes(self) -> int:
        """Bytes the weights take in memory at least: the file plus every external data file it uses."""
        return self.file_bytes + self.external_bytes

    @property
    def missing_external(self) -> tuple[ExternalRef, ...]:
        return tuple(r for r in self.external_refs if not r.exists or r.problem)

    @property
    def dynamic_inputs(self) -> tuple[InputInfo, ...]:
        return tuple(i for i in self.inputs if i.is_dynamic)

    @property
    def quantized_ops(self) -> dict[str, int]:
        return {op: n for op, n in self.op_types.items() if op in QUANTIZED_OPS}


# --------------------------------------------------------------------------------------------------
# The file: private copies of the spans walked, never a mapping
# --------------------------------------------------------------------------------------------------
# A map of the file would die of SIGBUS (which Python cannot catch) on a page past the end of a file that
# an exporter truncates and rewrites while the check runs. The walk reads the bytes it parses with pread
# instead: a window at a time, skipping the payloads (raw tensor data) it does not need by their length.
_HEAD = 20  # a field's key and its varint value or length: at most ten bytes each
_WINDOW = 16 * 1024  # read ahead from a field's start: a graph's nodes come many to a window
_WINDOWS = 8  # windows kept: an initializer is walked three times, each walk reads at both its ends
_CHUNK = 1024 * 1024  # a long packed field is counted a chunk at a time
_MAX_DIMS = 1024  # a tensor's rank; ONNX exporters write a handful
_HIGH_BIT = bytes(range(0x80, 0x100))
_pread = getattr(os, "pread", None)  # POSIX; Windows seeks and reads


class _Changed(Exception):
    """The file is shorter than when the walk began: it is being rewritten."""


class _Source:
    """The model file's bytes, read on demand into private copies."""

    __slots__ = ("_base", "_data", "_fd", "_size", "_windows")

    def __init__(self, fd: int, size: int) -> None:
        self._fd = fd
        self._size = size
        self._windows: dict[int, bytes] = {}  # file offset -> the bytes read there, oldest first
        self._base = 0
        self._data = b""  # the window served last (most lookups fall in it)

    def view(self, start: int, stop: int) -> tuple[bytes, int]:
        """Bytes that hold the file's ``[start, stop)`` and the file offset of their first byte."""
        data, base = self._data, self._base
        if base <= start and stop <= base + len(data):
            return data, base
        for base, data in self._windows.items():
            if base <= start and stop <= base + len(data):
                self._data, self._base = data, base
                return data, base
        data = self.read(start, max(stop, start + _WINDOW), need=stop - start)
        if len(data) <= 4 * _WINDOW:  # a long text field is used once: not kept
            if len(self._windows) >= _WINDOWS:
                del self._windows[next(iter(self._windows))]
            self._windows[start] = data
            self._data, self._base = data, start
        return data, start

    def read(self, start: int, stop: int, need: int) -> bytes:
        """Up to ``[start, stop)`` of the file (not past its size at the start), at least ``need`` bytes."""
        size = min(stop, self._size) - start
        if size <= 0:
            data = b""
        elif _pread is not None:
            data = _pread(self._fd, size, start)
        else:
            os.lseek(self._fd, start, os.SEEK_SET)
            data = os.read(self._fd, size)
        if len(data) < need:
            raise _Changed(f"the file ends at {start + len(data)} bytes, not {self._size}")
        return data


# --------------------------------------------------------------------------------------------------
# Wire format
# --------------------------------------------------------------------------------------------------
def _read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """The varint at ``buf[pos]`` (not reaching ``end``) and the position after it."""
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise _Truncated
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise _Malformed("varint longer than ten bytes")


def _fields(src: _Source, start: int, end: int) -> Iterator[tuple[int, int, Any]]:
    """Yield ``(field_number, wire_type, value)``; LEN values are ``(start, end)`` file offsets, not copies.

    Only the keys, varints and lengths are read: a window holding the next field's head is fetched when
    the one in hand ends before it, so a skipped payload is never read."""
    data, base = src._data, src._base  # the window in hand, asked for without a call: messages are many
    if not (base <= start and min(end, start + _HEAD) <= base + len(data)):
        data, base = src.view(start, min(end, start + _HEAD))
    limit = min(end, base + len(data)) - base  # data[:limit] is in hand
    pos = start - base  # positions are local to data; base + pos is the file offset
    stop = end - base
    while pos < stop:
        if pos + _HEAD > limit and limit < stop:
            at = base + pos
            data, base = src.view(at, min(end, at + _HEAD))
            limit, pos, stop = min(end, base + len(data)) - base, at - base, end - base
        key, pos = _read_varint(data, pos, limit)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _Malformed("field number 0")
        if wire == _VARINT:
            value, pos = _read_varint(data, pos, limit)
            yield number, wire, value
        elif wire == _LEN:
            length, pos = _read_varint(data, pos, limit)
            if pos + length > stop:
                raise _Truncated
            yield number, wire, (base + pos, base + pos + length)
            pos += length
        elif wire == _I64:
            if pos + 8 > stop:
                raise _Truncated
            yield number, wire, None
            pos += 8
        elif wire == _I32:
            if pos + 4 > stop:
                raise _Truncated
            yield number, wire, None
            pos += 4
        else:  # 3/4 (groups, never used by ONNX), 6, 7
            raise _Malformed(f"wire type {wire} in field {number}")


def _text(src: _Source, span: tuple[int, int]) -> str:
    start, stop = span
    data, base = src._data, src._base  # the window in hand, asked for without a call: names are many
    if not (base <= start and stop <= base + len(data)):
        data, base = src.view(start, stop)
    return data[start - base : stop - base].decode("utf-8", errors="replace")


def _packed_count(src: _Source, span: tuple[int, int]) -> int:
    """Number of varints in a packed repeated field (each ends with a byte whose high bit is clear)."""
    count = 0
    for at in range(span[0], span[1], _CHUNK):
        stop = min(span[1], at + _CHUNK)
        count += len(src.read(at, stop, need=stop - at).translate(None, _HIGH_BIT))
    return count


def _packed_dims(src: _Source, span: tuple[int, int], dims: list[int]) -> None:
    """Append the varints of a packed ``dims`` field to ``dims``."""
    if span[1] - span[0] > 10 * _MAX_DIMS:
        raise _Malformed("more dimensions than any tensor has")
    data, base = src.view(*span)
    pos, end = span[0] - base, span[1] - base
    while pos < end:
        d, pos = _read_varint(data, pos, end)
        dims.append(d)


def _add_dim(dims: list[int], value: int) -> None:
    if len(dims) >= _MAX_DIMS:
        raise _Malformed("more dimensions than any tensor has")
    dims.append(value)


# --------------------------------------------------------------------------------------------------
# Messages
# --------------------------------------------------------------------------------------------------
@dataclass
class _Walk:
    """State shared while walking one model: counters filled by the message readers below."""

    src: _Source
    model_dir: str
    op_types: Counter[str] = field(default_factory=Counter)
    subgraph_op_types: Counter[str] = field(default_factory=Counter)
    control_flow: list[str] = field(default_factory=list)
    node_count_all: int = 0
    initializer_count: int = 0
    initializer_bytes: int = 0
    external_bytes: int = 0
    external_refs: list[ExternalRef] = field(default_factory=list)


@dataclass
class _Node:
    name: str = ""
    op_type: str = ""
    domain: str = ""
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    int_attributes: dict[str, int] = field(default_factory=dict)
    constant: TensorInfo | None = None


def _read_node(w: _Walk, span: tuple[int, int], depth: int) -> _Node:
    node = _Node()
    subgraphs: list[tuple[int, int]] = []
    constant_value: TensorInfo | None = None
    for number, wire, value in _fields(w.src, *span):
        if wire != _LEN:
            continue
        if number == 1:
            node.inputs.append(_text(w.src, value))
        elif number == 2:
            node.outputs.append(_text(w.src, value))
        elif number == 3:
            node.name = _text(w.src, value)
        elif number == 4:
            node.op_type = _text(w.src, value)
        elif number == 7:
            node.domain = _text(w.src, value)
        elif number == 5:  # AttributeProto{name=1, f=2, i=3, t=5, g=6, floats=7, ints=8, graphs=11}
            a_name = ""
            a_int: int | None = None
            a_tensor: TensorInfo | None = None
            a_list = 0  # elements of floats/ints (a Constant's value_floats / value_ints)
            for a_num, a_wire, a_val in _fields(w.src, *value):
                if a_wire == _LEN and a_num in (6, 11):
                    subgraphs.append(a_val)
                elif a_wire == _LEN and a_num == 1:
                    a_name = _text(w.src, a_val)
                elif a_wire == _VARINT and a_num == 3:
                    a_int = a_val if a_val < (1 << 63) else a_val - (1 << 64)
                elif a_wire == _LEN and a_num == 5:
                    a_tensor = _tensor_info(w.src, a_val)
                elif a_num == 8:
                    a_list += _packed_count(w.src, a_val) if a_wire == _LEN else 1
                elif a_num == 7:
                    a_list += (a_val[1] - a_val[0]) // 4 if a_wire == _LEN else 1
            if a_int is not None:
                node.int_attributes[a_name] = a_int
            if a_name.startswith("value"):
                # a Constant's value (a tensor), value_ints / value_floats (1-D), value_int / ... (scalars)
                kind = "int64" if a_name == "value_ints" else "float32" if a_name == "value_floats" else None
                constant_value = a_tensor or TensorInfo(kind, (a_list,) if a_name.endswith("s") else ())
    if node.op_type == "Constant":  # decided after the loop: fields may come in any order
        node.constant = constant_value
    for sub in subgraphs:
        _read_graph(w, sub, depth + 1)
    return node


def _tensor_info(src: _Source, span: tuple[int, int]) -> TensorInfo:
    """TensorProto{dims=1, data_type=2}: the type and shape only."""
    dims: list[int] = []
    data_type = 0
    for number, wire, value in _fields(src, *span):
        if number == 1 and wire == _VARINT:
            _add_dim(dims, value)
        elif number == 1 and wire == _LEN:  # packed dims
            _packed_dims(src, value, dims)
        elif number == 2 and wire == _VARINT:
            data_type = value
    return TensorInfo(DATA_TYPES.get(data_type, (f"type{data_type}", 0))[0] if data_type else None, tuple(dims))


def _tensor_bytes(w: _Walk, span: tuple[int, int]) -> None:
    """Account one initializer: inline bytes, or an external data reference checked on disk."""
    dims: list[int] = []
    data_type = 0
    name = ""
    inline = 0
    external: dict[str, str] = {}
    location_external = False
    for number, wire, value in _fields(w.src, *span):
        if number == 1:
            if wire == _VARINT:
                _add_dim(dims, value)
            elif wire == _LEN:  # packed dims
                _packed_dims(w.src, value, dims)
        elif number == 2 and wire == _VARINT:
            data_type = value
        elif number == 8 and wire == _LEN:
            name = _text(w.src, value)
        elif number in (4, 5, 6, 7, 9, 10, 11) and wire == _LEN:
            inline += value[1] - value[0]
        elif number == 13 and wire == _LEN:  # StringStringEntryProto{key=1, value=2}
            key = val = ""
            for e_num, e_wire, e_val in _fields(w.src, *value):
                if e_wire == _LEN and e_num == 1:
                    key = _text(w.src, e_val)
                elif e_wire == _LEN and e_num == 2:
                    val = _text(w.src, e_val)
            external[key] = val
        elif number == 14 and wire == _VARINT:
            location_external = value == 1
    w.initializer_count += 1
    if not (location_external or external.get("location")):
        w.initializer_bytes += inline
        return
    length: int | None = None
    if external.get("length", "").isdigit():
        length = int(external["length"])
    else:
        per_element = DATA_TYPES.get(data_type, ("", 0))[1]
        count = 1
        for d in dims:
            count *= d
        length = int(count * per_element) if per_element else None
    offset = int(external["offset"]) if external.get("offset", "").isdigit() else 0
    location = external.get("location", "")
    w.external_refs.append(_check_external(w.model_dir, name, location, offset, length))
    if length:
        w.initializer_bytes += length
        w.external_bytes += length


def _check_external(model_dir: str, tensor: str, location: str, offset: int, length: int | None) -> ExternalRef:
    # onnxruntime (like onnx) refuses locations outside the model's directory; say so here as well.
    path = os.path.normpath(os.path.join(model_dir, location))
    if not location:
        return ExternalRef(tensor, location, path, exists=False, length=length, problem="no location given")
    if os.path.isabs(location) or os.path.relpath(path, model_dir).startswith(".."):
        return ExternalRef(tensor, location, path, exists=os.path.exists(path), length=length,
                           problem="points outside the model's directory")
    try:
        size = os.stat(path).st_size
    except OSError:
        return ExternalRef(tensor, location, path, exists=False, length=length)
    if length is not None and offset + length > size:
        return ExternalRef(tensor, location, path, exists=True, length=length,
                           problem=f"file has {size} bytes, the tensor needs bytes {offset}..{offset + length}")
    return ExternalRef(tensor, location, path, exists=True, length=length)


def _read_value_info(src: _Source, span: tuple[int, int]) -> InputInfo:
    name = ""
    dtype: str | None = None
    shape: list[int | str | None] | None = None
    for number, wire, value in _fields(src, *span):
        if number == 1 and wire == _LEN:
            name = _text(src, value)
        elif number == 2 and wire == _LEN:  # TypeProto{tensor_type=1}
            for t_num, t_wire, t_val in _fields(src, *value):
                if t_num != 1 or t_wire != _LEN:
                    continue
                for tt_num, tt_wire, tt_val in _fields(src, *t_val):  # Tensor{elem_type=1, shape=2}
                    if tt_num == 1 and tt_wire == _VARINT:
                        dtype = DATA_TYPES.get(tt_val, (f"type{tt_val}", 0))[0]
                    elif tt_num == 2 and tt_wire == _LEN:
                        shape = []
                        for d_num, d_wire, d_val in _fields(src, *tt_val):
                            if d_num == 1 and d_wire == _LEN:
                                shape.append(_read_dim(src, d_val))
    dims = tuple(shape) if shape is not None else None
    dynamic = tuple(i for i, d in enumerate(dims or ()) if not isinstance(d, int))
    return InputInfo(name=name, dtype=dtype, shape=dims, dynamic_dims=dynamic)


def _read_dim(src: _Source, span: tuple[int, int]) -> int | str | None:
    """Dimension{dim_value=1, dim_param=2}: a fixed size, a symbol, or None (unknown)."""
    for number, wire, value in _fields(src, *span):
        if number == 1 and wire == _VARINT:
            dim = int(value)
            return dim if dim < (1 << 63) else dim - (1 << 64)
        if number == 2 and wire == _LEN:
            return _text(src, value)
    return None


@dataclass
class _Graph:
    name: str = ""
    nodes: list[_Node] = field(default_factory=list)
    inputs: list[InputInfo] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    initializers: set[str] = field(default_factory=set)
    output_infos: list[InputInfo] = field(default_factory=list)
    initializer_infos: dict[str, TensorInfo] = field(default_factory=dict)


def _read_graph(w: _Walk, span: tuple[int, int], depth: int) -> _Graph:
    if depth > _MAX_NESTING:
        raise _Malformed("subgraphs nested deeper than any exporter writes")
    g = _Graph()
    for number, wire, value in _fields(w.src, *span):
        if wire != _LEN:
            continue
        if number == 1:
            node = _read_node(w, value, depth)
            g.nodes.append(node)
            w.node_count_all += 1
            w.op_types[node.op_type] += 1
            if depth > 0:
                w.subgraph_op_types[node.op_type] += 1
            if node.op_type in CONTROL_FLOW_OPS and node.domain in ("", "ai.onnx"):
                w.control_flow.append(f"{node.op_type} ({node.name or 'unnamed'})")
        elif number == 2:
            g.name = _text(w.src, value)
        elif number == 5:
            name = _initializer_name(w.src, value)
            g.initializers.add(name)
            if depth == 0:
                g.initializer_infos[name] = _tensor_info(w.src, value)
            _tensor_bytes(w, value)
        elif number == 11 and depth == 0:
            g.inputs.append(_read_value_info(w.src, value))
        elif number == 12 and depth == 0:
            g.output_infos.append(_read_value_info(w.src, value))
            g.outputs.append(g.output_infos[-1].name)
    return g


def _initializer_name(src: _Source, span: tuple[int, int]) -> str:
    for number, wire, value in _fields(src, *span):
        if number == 8 and wire == _LEN:
            return _text(src, value)
    return ""


def _read_function(w: _Walk, span: tuple[int, int]) -> None:
    """FunctionProto{node=7}: local functions are inlined by onnxruntime, so their ops count too."""
    for number, wire, value in _fields(w.src, *span):
        if number == 7 and wire == _LEN:
            node = _read_node(w, value, 1)
            w.node_count_all += 1
            w.op_types[node.op_type] += 1
            w.subgraph_op_types[node.op_type] += 1


# --------------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------------
def inspect_model(path: str | os.PathLike[str]) -> ModelInspection:
    """Read ``path``'s header; never raises for a bad file (see ``problem``).

    A file that changes while it is read (an exporter rewriting it in place) is reported as unreadable,
    "the file changed while it was read", and the check can simply run again.
    """
    path = os.path.abspath(os.fspath(path))
    try:
        # O_NONBLOCK: opening a FIFO named like a model must not wait forever for a writer; what is
        # not a regular file is refused before anything is read from it.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        with open(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(path)
            if not stat.S_ISREG(st.st_mode):
                return ModelInspection(path=path, problem="unreadable",
                                       problem_detail="not a regular file (a FIFO, socket or device)")
            size = st.st_size
            if size == 0:
                return ModelInspection(path=path, problem="invalid", problem_detail="the file is empty")
            try:
                found: ModelInspection | None = _inspect_bytes(path, size, _Source(fh.fileno(), size))
            except _Changed:
                found = None
            now = os.fstat(fh.fileno())
            if found is None or (now.st_size, now.st_mtime_ns) != (size, st.st_mtime_ns):
                # what was read may mix the old file and the new one: nothing of it is reported
                sizes = f"{size} bytes when the check began, {now.st_size} now"
                return ModelInspection(path=path, file_bytes=size, problem="unreadable",
                                       problem_detail=f"the file changed while it was read ({sizes}); "
                                       "run the check again once it is written")
            return found
    except IsADirectoryError:
        return ModelInspection(path=path, problem="unreadable", problem_detail="is a directory, not a file")
    except OSError as exc:
        return ModelInspection(path=path, problem="unreadable", problem_detail=f"{exc.strerror or exc}")
    except ValueError as exc:  # a path holding a NUL
        return ModelInspection(path=path, problem="unreadable", problem_detail=str(exc))
    except (MemoryError, RecursionError) as exc:
        return ModelInspection(path=path, problem="unreadable",
                               problem_detail=f"too large or too deeply nested to inspect ({type(exc).__name__})")


def _inspect_bytes(path: str, size: int, src: _Source) -> ModelInspection:
    w = _Walk(src=src, model_dir=os.path.dirname(path))
    ir_version: int | None = None
    producer = producer_version = ""
    opsets: dict[str, int] = {}
    graph: _Graph | None = None
    seen: list[int] = []
    try:
        for number, wire, value in _fields(src, 0, size):
            seen.append(number)
            if number == 1 and wire == _VARINT:
                ir_version = value
            elif number == 2 and wire == _LEN:
                producer = _text(src, value)
            elif number == 3 and wire == _LEN:
                producer_version = _text(src, value)
            elif number == 7 and wire == _LEN:
                graph = _read_graph(w, value, 0)
            elif number == 8 and wire == _LEN:  # OperatorSetIdProto{domain=1, version=2}
                domain, version = "", 0
                for o_num, o_wire, o_val in _fields(src, *value):
                    if o_num == 1 and o_wire == _LEN:
                        domain = _text(src, o_val)
                    elif o_num == 2 and o_wire == _VARINT:
                        version = o_val
                opsets["" if domain == "ai.onnx" else domain] = version
            elif number == 25 and wire == _LEN:
                _read_function(w, value)
    except _Truncated:
        # A cut-off model still starts like one (ir_version first, as every writer serialises it).
        if seen[:1] == [1] and ir_version is not None:
            return ModelInspection(path=path, file_bytes=size, problem="truncated", ir_version=ir_version,
                                   problem_detail=f"the file ends inside a field after {size} bytes; "
                                   "the download or copy was cut short")
        return ModelInspection(path=path, file_bytes=size, problem="invalid",
                               problem_detail="not an ONNX model: the bytes do not parse as a ModelProto")
    except (_Malformed, UnicodeDecodeError) as exc:
        return ModelInspection(path=path, file_bytes=size, problem="invalid",
                               problem_detail=f"not an ONNX model: {exc}")
    if ir_version is None or graph is None:
        missing = " and ".join(n for n, v in (("ir_version", ir_version), ("graph", graph)) if v is None)
        return ModelInspection(path=path, file_bytes=size, problem="invalid",
                               problem_detail=f"not an ONNX model: no {missing} field")
    if not opsets and ir_version >= 3:
        return ModelInspection(path=path, file_bytes=size, problem="truncated", ir_version=ir_version,
                               problem_detail="the model has a graph but no opset_import (written after the "
                               "graph): the file was probably cut short")
    inputs = tuple(i for i in graph.inputs if i.name not in graph.initializers)
    model_graph = _model_graph(graph, inputs)
    return ModelInspection(
        path=path,
        file_bytes=size,
        ir_version=ir_version,
        producer=f"{producer} {producer_version}".strip() or None,
        opsets=opsets,
        graph_name=graph.name or None,
        inputs=inputs,
        outputs=tuple(graph.outputs),
        node_count=len(graph.nodes),
        node_count_all=w.node_count_all,
        op_types=dict(sorted(w.op_types.items())),
        subgraph_op_types=dict(sorted(w.subgraph_op_types.items())),
        control_flow_nodes=tuple(w.control_flow),
        initializer_count=w.initializer_count,
        initializer_bytes=w.initializer_bytes,
        external_bytes=w.external_bytes,
        external_refs=tuple(w.external_refs),
        shape_nodes=_shape_nodes(model_graph),
        graph=model_graph,
    )


def _shape_nodes(graph: ModelGraph) -> tuple[str, ...]:
    """The shape-only nodes' names in graph order; Constant nodes left out (onnxruntime turns them into
    initializers, so they never run on any provider)."""
    names = shape_only_names(graph)
    return tuple(n.name for n in graph.nodes if n.name in names and n.op_type != "Constant")


def _model_graph(graph: _Graph, inputs: tuple[InputInfo, ...]) -> ModelGraph:
    nodes = tuple(
        GraphNode(index=i, name=n.name, op_type=n.op_type, domain="" if n.domain == "ai.onnx" else n.domain,
                  inputs=tuple(n.inputs), outputs=tuple(n.outputs), int_attributes=n.int_attributes,
                  constant=n.constant)
        for i, n in enumerate(graph.nodes)
    )
    return ModelGraph(nodes=nodes, initializers=graph.initializer_infos, inputs=inputs,
                      outputs=tuple(graph.output_infos))


def parse_input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """``"name=1x3x224x224"`` -> ``("name", (1, 3, 224, 224))``; ``ValueError`` with a clear message."""
    name, sep, dims = text.rpartition("=")
    if not sep or not name or not dims:
        raise ValueError(f"--input-shape {text!r}: expected NAME=D1xD2x..., e.g. input=1x3x224x224")
    try:
        shape = tuple(int(d) for d in dims.lower().split("x"))
    except ValueError:
        raise ValueError(f"--input-shape {text!r}: dimensions must be integers separated by 'x'") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"--input-shape {text!r}: dimensions must not be negative")
    return name, shape


__all__ = [
    "CONTROL_FLOW_OPS",
    "QUANTIZED_OPS",
    "ExternalRef",
    "GraphNode",
    "InputInfo",
    "ModelGraph",
    "ModelInspection",
    "TensorInfo",
    "inspect_model",
    "parse_input_shape",
]


def parse_input_shapes(values: Iterable[str]) -> dict[str, tuple[int, ...]]:
    """The repeated ``--input-shape name=1x3x224x224`` option -> ``{name: shape}``; ``ValueError`` if bad."""
    shapes: dict[str, tuple[int, ...]] = {}
    for text in values:
        name, shape = parse_input_shape(text)
        shapes[name] = shape
    return shapes


def normalise_input_shapes(value: Mapping[str, Iterable[int]] | Iterable[str] | None) -> dict[str, tuple[int, ...]]:
    """``{"X": (2, 64)}`` from a mapping or from ``--input-shape`` strings (``"X=2x64"``).

    Raises:
        ValueError: a malformed ``--input-shape`` value.
    """
    if not value:
        return {}
    if isinstance(value, Mapping):
        return {str(k): tuple(int(d) for d in v) for k, v in value.items()}
    return parse_input_shapes(value)

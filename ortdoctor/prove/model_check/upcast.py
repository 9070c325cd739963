"""A float32 copy of a bfloat16 model for the CPU EP's reference: the CPU EP has no bfloat16 kernel for most
ops, and onnxruntime casts around missing kernels only for float16 (its InsertCastTransformer), so a
bfloat16 model does not load there at all ("Could not find an implementation for Add(14) node ...").

The copy computes in float32 from the same values: every bfloat16 weight (and input, and Constant) is kept
as it is and followed by a ``Cast`` to float32, which is exact (bfloat16 is float32 with its low 16 bits
dropped); ``Cast`` nodes to bfloat16 cast to float32 instead; graph outputs that were bfloat16 are named
without a type (onnxruntime infers float32); ``value_info`` is dropped (its types no longer hold). No weight
is read or copied: external data stays where it is. The reference is then at least as precise as the model's
own arithmetic, and the report says it was upcast.

Top-level graph only (a bfloat16 tensor made inside an If/Loop body is left alone). Runs in the child, on
the bytes of a serialized ``ModelProto`` (the model's part, or the file).
"""

from __future__ import annotations

from collections.abc import Iterator

from ortdoctor.prove.model_check.inspect import _I32, _I64, _LEN, _VARINT, _read_varint

BFLOAT16, FLOAT = 16, 1
_SUFFIX = "/ortdoctor_float32"


def _walk(data: bytes) -> Iterator[tuple[int, int, int | bytes, bytes]]:
    """``(field number, wire type, value, the field's whole bytes)``; LEN values are the payload bytes."""
    pos, end = 0, len(data)
    while pos < end:
        start = pos
        key, pos = _read_varint(data, pos, end)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == _VARINT:
            value, pos = _read_varint(data, pos, end)
        elif wire == _LEN:
            length, pos = _read_varint(data, pos, end)
            value, pos = data[pos : pos + length], pos + length
        elif wire == _I64:
            value, pos = 0, pos + 8
        elif wire == _I32:
            value, pos = 0, pos + 4
        else:
            raise ValueError(f"wire type {wire} in field {number}")
        yield number, wire, value, data[start:pos]


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | 0x80 if value else byte)
        if not value:
            return bytes(out)


def _len(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | _LEN) + _varint(len(payload)) + payload


def _vint(number: int, value: int) -> bytes:
    return _varint(number << 3 | _VARINT) + _varint(value)


def _get(data: bytes, number: int) -> int | bytes | None:
    for n, _, value, _ in _walk(data):
        if n == number:
            return value
    return None


def _tensor_type(value_info: bytes) -> int | None:
    """ValueInfoProto.type.tensor_type.elem_type."""
    type_proto = _get(value_info, 2)
    tensor = _get(type_proto, 1) if isinstance(type_proto, bytes) else None
    elem = _get(tensor, 1) if isinstance(tensor, bytes) else None
    return elem if isinstance(elem, int) else None


def _cast(source: str, target: str) -> bytes:
    to = _len(1, b"to") + _vint(3, FLOAT) + _vint(20, 2)  # AttributeProto{name, i, type=INT}
    return (_len(1, source.encode()) + _len(2, target.encode()) + _len(3, (target + "_cast").encode())
            + _len(4, b"Cast") + _len(5, to))


def _bf16_value(node: bytes) -> bool:
    """A Constant / ConstantOfShape whose ``value`` tensor is bfloat16."""
    for n, _, value, _ in _walk(node):
        if n == 5 and isinstance(value, bytes) and _get(value, 1) == b"value":
            tensor = _get(value, 5)
            return isinstance(tensor, bytes) and _get(tensor, 2) == BFLOAT16
    return False


def _node(node: bytes, renamed: set[str]) -> tuple[bytes, list[str]]:
    """The node with its bfloat16 inputs renamed to their float32 casts and a Cast to bfloat16 made a Cast to
    float32; and the outputs that stay bfloat16 (a bfloat16 Constant's), to be cast after it."""
    op = _get(node, 4)
    out = bytearray()
    outputs: list[bytes] = []
    for n, _, value, raw in _walk(node):
        if n == 1 and isinstance(value, bytes) and value.decode() in renamed:
            out += _len(1, (value.decode() + _SUFFIX).encode())
        elif n == 5 and op == b"Cast" and isinstance(value, bytes) and _get(value, 1) == b"to" \
                and _get(value, 3) == BFLOAT16:
            out += _len(5, _len(1, b"to") + _vint(3, FLOAT) + _vint(20, 2))
        else:
            if n == 2 and isinstance(value, bytes):
                outputs.append(value)
            out += raw
    narrow = [o.decode() for o in outputs] if op in (b"Constant", b"ConstantOfShape") and _bf16_value(node) else []
    return bytes(out), narrow


def upcast_bfloat16(model: bytes) -> tuple[bytes, int]:
    """The float32 copy (see the module docstring) and how many bfloat16 tensors were cast; ``(model, 0)``
    unchanged when it has none."""
    graph = _get(model, 7)
    if not isinstance(graph, bytes):
        raise ValueError("the model has no graph")
    narrow: list[str] = []
    for n, _, value, _ in _walk(graph):
        if n == 5 and isinstance(value, bytes) and _get(value, 2) == BFLOAT16:
            name = _get(value, 8)
            narrow += [name.decode()] if isinstance(name, bytes) else []
        elif n == 11 and isinstance(value, bytes) and _tensor_type(value) == BFLOAT16:
            name = _get(value, 1)
            narrow += [name.decode()] if isinstance(name, bytes) else []
    renamed = set(narrow)
    nodes = [_cast(name, name + _SUFFIX) for name in narrow]
    count = len(narrow)
    rest = bytearray()
    for n, _, value, raw in _walk(graph):
        if n == 1 and isinstance(value, bytes):
            node, made = _node(value, renamed)
            nodes.append(node)
            for made_name in made:
                nodes.append(_cast(made_name, made_name + _SUFFIX))
                renamed.add(made_name)
            count += len(made) + (_get(value, 4) == b"Cast" and node != value)
        elif n == 12 and isinstance(value, bytes) and _tensor_type(value) == BFLOAT16:
            output = _get(value, 1)
            rest += _len(12, _len(1, output if isinstance(output, bytes) else b""))
        elif n != 13:  # value_info: its types no longer hold
            rest += raw
    if not count:
        return model, 0
    new_graph = b"".join(_len(1, node) for node in nodes) + bytes(rest)
    head = b"".join(raw for n, _, _, raw in _walk(model) if n != 7)
    return head + _len(7, new_graph), count


__all__ = ["upcast_bfloat16"]

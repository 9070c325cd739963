"""The header of a NumPy ``.npy`` file (dtype and shape), read without numpy.

``check --model --input NAME=file.npy`` needs the shape in the parent, which never imports numpy: it
fixes the model's symbolic dimensions for the synthetic values of the other inputs. The format is
NumPy's own (``numpy/lib/format.py``): the magic ``\\x93NUMPY``, a version byte pair, a little-endian
header length (2 bytes in version 1, 4 in versions 2 and 3) and a Python dict literal with ``descr``,
``fortran_order`` and ``shape``.
"""

from __future__ import annotations

import ast
import os
import struct
from dataclasses import dataclass

MAGIC = b"\x93NUMPY"
_MAX_HEADER = 1 << 20

#: ``descr`` without its byte-order character -> the dtype name numpy and ortdoctor's reports use
_NAMES = {
    "f2": "float16", "f4": "float32", "f8": "float64", "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
    "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64", "b1": "bool",
}


class NpyError(ValueError):
    """Not a .npy file, or a header this reader does not understand."""


@dataclass(frozen=True)
class NpyHeader:
    dtype: str  # "int64"; the raw descr ("<c8", "|O") for types outside the table
    shape: tuple[int, ...]
    fortran_order: bool


def read_npy_header(path: str | os.PathLike[str]) -> NpyHeader:
    """Raises :class:`NpyError` for anything that is not a readable .npy header, OSError when unreadable."""
    with open(path, "rb") as fh:
        start = fh.read(10)
        if len(start) < 10 or not start.startswith(MAGIC):
            raise NpyError(f"{os.fspath(path)} is not a .npy file (numpy.save writes one)")
        major = start[6]
        if major == 1:
            (length,) = struct.unpack("<H", start[8:10])
        elif major in (2, 3):
            length = struct.unpack("<I", start[8:10] + fh.read(2))[0]
        else:
            raise NpyError(f"{os.fspath(path)}: .npy format version {major} is not known")
        if length > _MAX_HEADER:
            raise NpyError(f"{os.fspath(path)}: a .npy header of {length} bytes")
        raw = fh.read(length)
    try:
        header = ast.literal_eval(raw.decode("utf-8" if major == 3 else "latin1"))
    except (ValueError, SyntaxError, UnicodeDecodeError):
        raise NpyError(f"{os.fspath(path)}: the .npy header is not a dict literal") from None
    if not isinstance(header, dict) or not {"descr", "shape"} <= set(header):
        raise NpyError(f"{os.fspath(path)}: the .npy header lacks descr or shape")
    descr, shape = header["descr"], header["shape"]
    if not isinstance(descr, str) or not isinstance(shape, tuple) or not all(isinstance(d, int) for d in shape):
        raise NpyError(f"{os.fspath(path)}: a structured or malformed .npy header")
    return NpyHeader(_NAMES.get(descr.lstrip("<>|="), descr), tuple(shape), bool(header.get("fortran_order")))


__all__ = ["MAGIC", "NpyError", "NpyHeader", "read_npy_header"]

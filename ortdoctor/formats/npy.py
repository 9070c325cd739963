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

from ortdoctor.core.record import record
from ortdoctor.formats.regular_file import NotRegularFile, open_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

MAGIC = b"\x93NUMPY"
# numpy.load itself refuses a header over 10,000 bytes unless told otherwise (its max_header_size); a
# dict literal of descr, fortran_order and shape takes a few hundred. This bound also keeps the literal
# parser away from the nesting that would exhaust it.
_MAX_HEADER = 64 * 1024

#: ``descr`` without its byte-order character -> the dtype name numpy and ortdoctor's reports use
_NAMES = {
    "f2": "float16", "f4": "float32", "f8": "float64", "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
    "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64", "b1": "bool",
}


class NpyError(ValueError):
    """Not a .npy file, or a header this reader does not understand."""


@record
class NpyHeader:
    dtype: str  # "int64"; the raw descr ("<c8", "|O") for types outside the table
    shape: tuple[int, ...]
    fortran_order: bool


def read_npy_header(path: str | os.PathLike[str]) -> NpyHeader:
    """The dtype, shape and order of a .npy file.

    Raises:
        NpyError: anything else: the file cannot be opened or read, is not a regular file (a FIFO is
            refused before it is read), is not a .npy file, or has a header this reader does not
            understand. Nothing else escapes, and at most ``_MAX_HEADER`` bytes are read.
    """
    name = os.fspath(path)
    try:
        with open_regular(path) as fh:  # a FIFO named like an input must not block the check
            start = fh.read(12)
            raw = _header_bytes(name, start, fh)
    except NpyError:
        raise
    except OSError as exc:
        raise NpyError(f"{name}: {exc.strerror or exc}") from None
    except NotRegularFile as exc:
        raise NpyError(str(exc)) from None
    except ValueError as exc:  # a path holding a NUL
        raise NpyError(f"{name!r}: {exc}") from None
    try:
        header = ast.literal_eval(raw.decode("utf-8" if start[6] == 3 else "latin1"))
    except (ValueError, TypeError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError):
        # MemoryError and RecursionError: a header nested deeper than the parser goes ("not not ... 1",
        # "(1+1+...)"); numpy.save writes a flat dict literal
        raise NpyError(f"{name}: the .npy header is not a dict literal") from None
    if not isinstance(header, dict) or not {"descr", "shape"} <= set(header):
        raise NpyError(f"{name}: the .npy header lacks descr or shape")
    descr, shape = header["descr"], header["shape"]
    if not isinstance(descr, str) or not isinstance(shape, tuple) or not all(isinstance(d, int) for d in shape):
        raise NpyError(f"{name}: a structured or malformed .npy header")
    return NpyHeader(_NAMES.get(descr.lstrip("<>|="), descr), tuple(shape), bool(header.get("fortran_order")))


def _header_bytes(name: str, start: bytes, fh: BinaryIO) -> bytes:
    """The header's text, after the magic, the version and the length (``start``: the first 12 bytes)."""
    if len(start) < 10 or not start.startswith(MAGIC):
        raise NpyError(f"{name} is not a .npy file (numpy.save writes one)")
    major = start[6]
    if major == 1:
        (length,) = struct.unpack_from("<H", start, 8)
        at = 10
    elif major in (2, 3):
        if len(start) < 12:
            raise NpyError(f"{name}: the .npy file ends inside its header length")
        (length,) = struct.unpack_from("<I", start, 8)
        at = 12
    else:
        raise NpyError(f"{name}: .npy format version {major} is not known")
    if length > _MAX_HEADER:
        raise NpyError(f"{name}: a .npy header of {length} bytes (numpy writes a few hundred)")
    raw = start[at:] + fh.read(max(0, length - (len(start) - at)))
    if len(raw) < length:
        raise NpyError(f"{name}: the .npy file ends inside its header ({len(raw)} of {length} bytes)")
    return raw[:length]


__all__ = ["MAGIC", "NpyError", "NpyHeader", "read_npy_header"]

"""Load the compatibility matrix: the shipped one from its pre-validated snapshot, any other file from YAML.

Parsing the ~80 KB YAML (and importing PyYAML) and validating it costs tens of milliseconds, and every
``check``, ``preload``, hook start and smoke child needs the matrix. So the package ships
``matrix_snapshot.marshal`` beside this module: the *validated model* of the shipped YAML, written by
``scripts/gen_matrix_snapshot.py`` under a header line holding the YAML's size and CRC-32. When the
YAML's bytes still match, the model is rebuilt from the snapshot without validating again (one
``marshal.loads``); any other file (an edited checkout, ``--matrix FILE``, ``$ORTDOCTOR_MATRIX``) is
parsed and validated. Nothing is written at run time. A test keeps the snapshot equal to what validating
the YAML gives.

Why marshal: it is the interpreter's own loader for plain values (tuples, integer keys and all), twice as
fast as ``json.loads`` on this document, and a text-mode ``check`` then needs no ``json`` (whose import
compiles five patterns: ~2% of the command). The snapshot is written in marshal's version 2, which has no
back-references, so the bytes are the same whichever Python writes them and ``--check`` compares bytes;
every Python this package supports reads it. A Python that cannot read it, like any mismatch, takes the
YAML path: slower, never wrong.
"""

from __future__ import annotations

import marshal
import os
import zlib
from _thread import allocate_lock

from ortdoctor.core.record import field_names, replace
from ortdoctor.decide.matrix import model
from ortdoctor.decide.matrix.model import MATRIX_ENV, Matrix, MatrixError
from ortdoctor.formats.regular_file import NotRegularFile, open_regular, read_capped

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["default_matrix_path", "load_matrix", "snapshot_bytes", "snapshot_path"]

SNAPSHOT_FORMAT = 3
SNAPSHOT_MARSHAL_VERSION = 2  # no back-references: the same bytes from every Python
_TYPE = "@"  # key naming the model class of an encoded object
_CLASSES: dict[str, type[Any]] = {
    cls.__name__: cls for cls in (model.LibSpec, model.CudaMajor, model.CudnnMajor, model.Feed, model.KnownBad,
                                  model.PlatformArchs, model.Release, model.TorchVariant, model.TorchRelease,
                                  model.PackageRow, model.Matrix, model.TensorrtBuild, model.TensorrtPip,
                                  model.TensorrtMajor, model.TensorrtFacts, model.TensorrtGpuFloor, model.JetsonFeed,
                                  model.JetsonFacts)
}
_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def default_matrix_path() -> str:
    """The shipped file: inside the installed package, else at the repository root (source checkout)."""
    inside = os.path.join(_PACKAGE, "compat_matrix.yaml")
    return inside if os.path.isfile(inside) else os.path.join(os.path.dirname(_PACKAGE), "compat_matrix.yaml")


def snapshot_path() -> str:
    """``matrix_snapshot.marshal`` beside this module."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "matrix_snapshot.marshal")


_cache: dict[str, Matrix] = {}
_cache_lock = allocate_lock()  # _thread: built in, where threading costs an import


def load_matrix(path: str | os.PathLike[str] | None = None) -> Matrix:
    """Load a matrix. ``None``: ``$ORTDOCTOR_MATRIX`` if set, else the shipped file (loaded once per process).

    Raises:
        MatrixError: unreadable, not a regular file (a FIFO or device is refused before it is read),
            larger than any matrix, not YAML, wrong types, inconsistent, duplicate versions. Nothing else
            escapes, whatever the file holds.
    """
    if path is None:
        env = os.environ.get(MATRIX_ENV, "").strip()
        if env:
            return _load(env)
        shipped = default_matrix_path()
        with _cache_lock:  # the shipped file does not change under a running process
            if shipped not in _cache:
                _cache[shipped] = _load(shipped)
            return _cache[shipped]
    return _load(os.fspath(path))


# The shipped matrix is ~80 KB; a file a thousand times larger is not one (and /dev/zero never ends).
_MAX_MATRIX_BYTES = 64 * 1024 * 1024


def _read(name: str) -> bytes:
    try:
        # open_regular: a FIFO must not block the reader (the hook runs inside the user's program), and a
        # device is refused before a byte is read
        with open_regular(name) as f:
            # the size first: a 100 GB sparse file is refused without reading 64 MB of it
            too_big = os.fstat(f.fileno()).st_size > _MAX_MATRIX_BYTES
            raw = b"" if too_big else read_capped(f, _MAX_MATRIX_BYTES)
    except FileNotFoundError:
        raise MatrixError(name, "", "file not found") from None
    except NotRegularFile:
        what = "is a directory" if os.path.isdir(name) else "is a FIFO, socket or device"
        raise MatrixError(name, "", f"{what}, not a matrix file") from None
    except OSError as exc:
        raise MatrixError(name, "", f"cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:  # a path holding a NUL
        raise MatrixError(name, "", f"cannot read: {exc}") from None
    if too_big or len(raw) > _MAX_MATRIX_BYTES:
        raise MatrixError(name, "", f"larger than {_MAX_MATRIX_BYTES} bytes: not a matrix file")
    return raw


def _load(path: str | os.PathLike[str]) -> Matrix:
    name = os.fspath(path)
    raw = _read(name)
    trusted = _from_snapshot(_fingerprint(raw))
    if trusted is not None:
        return replace(trusted, path=name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MatrixError(name, "", f"cannot read: {exc}") from None
    from ortdoctor.decide.matrix.validate import validate  # only for a file the snapshot does not cover

    try:
        return validate(name, _parse_yaml(name, text))
    except MatrixError:
        raise
    except (RecursionError, MemoryError) as exc:
        # a document nested or aliased beyond what the parser or the validator can hold
        raise MatrixError(name, "", f"too deeply nested or too large to read ({type(exc).__name__})") from None
    except Exception as exc:  # the contract: any bad file is a MatrixError, never a crash
        raise MatrixError(name, "", f"cannot be read as a matrix: {type(exc).__name__}: {exc}") from None


def _parse_yaml(name: str, text: str) -> Any:
    import yaml  # only for a file the snapshot does not cover: `check` with the shipped matrix skips it

    try:
        # The C build of the safe loader when PyYAML has it (same safety as yaml.safe_load, ~5x faster);
        # the pure-Python safe loader otherwise.
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise MatrixError(name, "", f"not valid YAML{where}: {problem}") from None


# ------------------------------------------------------------------------------------------------
# The snapshot: the validated model of the shipped YAML
# ------------------------------------------------------------------------------------------------
def _fingerprint(raw: bytes) -> str:
    """Size and CRC-32 of the YAML's bytes: enough to tell the shipped file from an edited one, and
    cheap (zlib is built in; hashlib would load OpenSSL on every start)."""
    return f"{len(raw)}:{zlib.crc32(raw):08x}"


def _encode(value: Any) -> Any:
    """The model as plain values marshal writes: each model object a dict naming its class under ``"@"``."""
    names = field_names(value)
    if names is not None:
        out: dict[str, Any] = {_TYPE: type(value).__name__}
        for name in names:
            out[name] = _encode(getattr(value, name))
        return out
    if isinstance(value, dict):
        if not (all(isinstance(k, str) for k in value)
                or all(isinstance(k, int) and not isinstance(k, bool) for k in value)):
            raise TypeError(f"mixed or non-string keys cannot go into the snapshot: {list(value)[:5]}")
        if _TYPE in value:
            raise TypeError(f"the key {_TYPE!r} is reserved by the snapshot format")
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(_encode(v) for v in value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"{type(value).__name__} cannot go into the snapshot: {value!r}")


_CONTAINERS = (dict, tuple)


def _decode(value: Any) -> Any:
    """The model from the loaded values, in one pass: a model object for each ``{"@": class, ...}``. The
    snapshot holds every field of each object, already validated, so the object's state is set as it
    stands: the loaded dict itself becomes its ``__dict__`` (~2x faster than calling ``__init__`` for each
    of the ~300 objects; none of the model classes has a ``__post_init__``, which a test checks). Leaves
    are not visited, and a tuple of leaves (732 of the 775 tuples) is kept as loaded."""
    if type(value) is tuple:
        for item in value:
            if type(item) in _CONTAINERS:
                return tuple([_decode(v) if type(v) in _CONTAINERS else v for v in value])
        return value
    name = value.pop(_TYPE, None)
    for key, item in value.items():
        if type(item) in _CONTAINERS:
            value[key] = _decode(item)  # replacing a value while iterating is allowed: the keys stay
    if name is None:
        return value
    obj = _new(_CLASSES[name])
    _set_state(obj, "__dict__", value)
    return obj


_new = object.__new__
_set_state = object.__setattr__  # the classes are frozen: their own __setattr__ refuses


def snapshot_bytes(yaml_path: str | os.PathLike[str]) -> bytes:
    """What ``matrix_snapshot.marshal`` holds for the YAML at ``yaml_path`` (validated first): a header
    line naming the format and the YAML's fingerprint, then the model.

    Raises:
        MatrixError: the YAML is not a valid matrix (a snapshot is never written for one).
    """
    from ortdoctor.decide.matrix.validate import validate

    name = os.fspath(yaml_path)
    raw = _read(name)
    matrix = validate(name, _parse_yaml(name, raw.decode("utf-8")))
    return _header(_fingerprint(raw)) + marshal.dumps(_encode(replace(matrix, path="")), SNAPSHOT_MARSHAL_VERSION)


def _header(fingerprint: str) -> bytes:
    return f"ortdoctor matrix snapshot {SNAPSHOT_FORMAT} yaml {fingerprint}\n".encode()


def _from_snapshot(fingerprint: str) -> Matrix | None:
    """The model of the YAML with that fingerprint, from the snapshot; None when it does not cover it."""
    try:
        with open(snapshot_path(), "rb") as f:
            data = f.read()
    except OSError:
        return None
    header = _header(fingerprint)
    if not data.startswith(header):  # another YAML, or another format: not decoded at all
        return None
    try:
        found = _decode(marshal.loads(memoryview(data)[len(header):]))
    except (ValueError, TypeError, KeyError, AttributeError, EOFError):
        return None
    return found if isinstance(found, Matrix) else None

"""Load the compatibility matrix: the shipped one from its pre-validated snapshot, any other file from YAML.

Parsing the ~80 KB YAML (and importing PyYAML) and validating it costs tens of milliseconds, and every
``check``, ``preload``, hook start and smoke child needs the matrix. So the package ships
``matrix_snapshot.json`` beside this module: the *validated model* of the shipped YAML, written by
``scripts/gen_matrix_snapshot.py`` together with the YAML's size and CRC-32. When the YAML's bytes still
match, the model is rebuilt from the snapshot without validating again (one ``json.loads``); any other
file (an edited checkout, ``--matrix FILE``, ``$ORTDOCTOR_MATRIX``) is parsed and validated. Nothing is
written at run time. A test keeps the snapshot equal to what validating the YAML gives.
"""

from __future__ import annotations

import json
import os
import zlib
from _thread import allocate_lock

from ortdoctor.core.record import field_names, replace
from ortdoctor.decide.matrix import model
from ortdoctor.decide.matrix.model import MATRIX_ENV, Matrix, MatrixError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["default_matrix_path", "load_matrix", "snapshot_document", "snapshot_path"]

SNAPSHOT_FORMAT = 2
_TYPE = "@"  # key naming the model class of a JSON object
# JSON keys are strings; the model has integer keys (``cuda_majors: {12: ...}``). A mapping whose keys
# are integers is written as ``{"__int_keys__": {"12": ...}}`` and turned back on reading.
_INT_KEYS = "__int_keys__"
_CLASSES: dict[str, type[Any]] = {
    cls.__name__: cls for cls in (model.LibSpec, model.CudaMajor, model.CudnnMajor, model.Feed, model.KnownBad,
                                  model.PlatformArchs, model.Release, model.TorchVariant, model.TorchRelease,
                                  model.PackageRow, model.Matrix, model.TensorrtBuild, model.TensorrtPip,
                                  model.TensorrtMajor, model.TensorrtFacts)
}
_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def default_matrix_path() -> str:
    """The shipped file: inside the installed package, else at the repository root (source checkout)."""
    inside = os.path.join(_PACKAGE, "compat_matrix.yaml")
    return inside if os.path.isfile(inside) else os.path.join(os.path.dirname(_PACKAGE), "compat_matrix.yaml")


def snapshot_path() -> str:
    """``matrix_snapshot.json`` beside this module."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "matrix_snapshot.json")


_cache: dict[str, Matrix] = {}
_cache_lock = allocate_lock()  # _thread: built in, where threading costs an import


def load_matrix(path: str | os.PathLike[str] | None = None) -> Matrix:
    """Load a matrix. ``None``: ``$ORTDOCTOR_MATRIX`` if set, else the shipped file (loaded once per process).

    Raises:
        MatrixError: unreadable, not YAML, wrong types, inconsistent, duplicate versions.
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


def _read(name: str) -> bytes:
    try:
        with open(name, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise MatrixError(name, "", "file not found") from None
    except IsADirectoryError:
        raise MatrixError(name, "", "is a directory, not a matrix file") from None
    except OSError as exc:
        raise MatrixError(name, "", f"cannot read: {exc}") from None


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

    return validate(name, _parse_yaml(name, text))


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
    names = field_names(value)
    if names is not None:
        out: dict[str, Any] = {_TYPE: type(value).__name__}
        for name in names:
            out[name] = _encode(getattr(value, name))
        return out
    if isinstance(value, dict):
        if value and all(isinstance(k, int) and not isinstance(k, bool) for k in value):
            return {_INT_KEYS: {str(k): _encode(v) for k, v in value.items()}}
        if not all(isinstance(k, str) for k in value):
            raise TypeError(f"mixed or non-string keys cannot go into the snapshot: {list(value)[:5]}")
        if _INT_KEYS in value or _TYPE in value:
            raise TypeError(f"the keys {_INT_KEYS!r} and {_TYPE!r} are reserved by the snapshot format")
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"{type(value).__name__} cannot go into the snapshot: {value!r}")


def _decode(value: Any) -> Any:
    """The model from the parsed JSON, in one pass: tuples where JSON has lists, integer keys back, and a
    model object for each ``{"@": class, ...}``. The snapshot holds every field of each object, already
    validated, so the object's state is set as it stands (~2x faster than calling ``__init__`` for each of
    the ~500 objects; none of the model classes has a ``__post_init__``, which a test checks)."""
    kind = type(value)
    if kind is list:
        return tuple([_decode(v) for v in value])
    if kind is dict:
        name = value.pop(_TYPE, None)
        if name is not None:
            obj = _new(_CLASSES[name])
            _set_state(obj, "__dict__", {k: _decode(v) for k, v in value.items()})
            return obj
        if len(value) == 1 and _INT_KEYS in value:
            return {int(k): _decode(v) for k, v in value[_INT_KEYS].items()}
        return {k: _decode(v) for k, v in value.items()}
    return value


_new = object.__new__
_set_state = object.__setattr__  # the classes are frozen: their own __setattr__ refuses


def snapshot_document(yaml_path: str | os.PathLike[str]) -> dict[str, Any]:
    """What ``matrix_snapshot.json`` holds for the YAML at ``yaml_path`` (validated first).

    Raises:
        MatrixError: the YAML is not a valid matrix (a snapshot is never written for one).
    """
    from ortdoctor.decide.matrix.validate import validate

    name = os.fspath(yaml_path)
    raw = _read(name)
    matrix = validate(name, _parse_yaml(name, raw.decode("utf-8")))
    return {"format": SNAPSHOT_FORMAT, "yaml": _fingerprint(raw), "model": _encode(replace(matrix,
                                                                                                      path=""))}


def _from_snapshot(fingerprint: str) -> Matrix | None:
    """The model of the YAML with that fingerprint, from the snapshot; None when it does not cover it."""
    try:
        with open(snapshot_path(), encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return None
    # The fingerprint is near the start: a file it does not match is not decoded at all.
    if f'"yaml": "{fingerprint}"' not in text[:256]:
        return None
    try:
        doc = _decode(json.loads(text))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != SNAPSHOT_FORMAT or doc.get("yaml") != fingerprint:
        return None
    found = doc.get("model")
    return found if isinstance(found, Matrix) else None

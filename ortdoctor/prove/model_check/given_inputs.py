"""``--input NAME=file.npy``: the user's own values for a model input, checked before anything runs.

The parent reads only each file's header (:mod:`ortdoctor.formats.npy`): its shape fixes the model's
symbolic dimensions for the synthetic values of the other inputs; the child loads the arrays.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from ortdoctor.formats.npy import NpyError, NpyHeader, read_npy_header


def parse_input_files(values: Mapping[str, str] | Iterable[str] | None) -> dict[str, str]:
    """``["ids=a.npy"]`` or ``{"ids": "a.npy"}`` -> ``{"ids": "/abs/a.npy"}``.

    Raises:
        ValueError: a value that is not NAME=FILE, a name given twice, a file that is missing or not a .npy file.
    """
    if not values:
        return {}
    pairs: list[tuple[str, str]] = []
    if isinstance(values, Mapping):
        pairs = [(str(k), str(v)) for k, v in values.items()]
    else:
        for text in values:
            name, sep, path = text.partition("=")
            if not sep or not name.strip() or not path.strip():
                raise ValueError(f"--input {text!r}: expected NAME=FILE.npy, e.g. input_ids=ids.npy")
            pairs.append((name.strip(), path.strip()))
    out: dict[str, str] = {}
    for name, path in pairs:
        if name in out:
            raise ValueError(f"--input names {name!r} twice")
        full = os.path.abspath(os.path.expanduser(path))
        try:
            read_npy_header(full)
        except NpyError as exc:
            raise ValueError(f"--input {name}={path}: {exc}") from None
        except OSError as exc:
            raise ValueError(f"--input {name}={path}: {exc.strerror or exc}") from None
        out[name] = full
    return out


def headers(files: Mapping[str, str]) -> dict[str, NpyHeader]:
    """The header of each file of :func:`parse_input_files` (already checked there)."""
    return {name: read_npy_header(path) for name, path in files.items()}


__all__ = ["headers", "parse_input_files"]

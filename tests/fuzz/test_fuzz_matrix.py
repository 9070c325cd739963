"""Property tests for the matrix loader: random YAML documents and mutated copies of the shipped
compat_matrix.yaml. Only MatrixError may escape ``load_matrix``.

Budget: ORTDOCTOR_FUZZ_EXAMPLES (default 200; the shipped-file mutations run a fifth as many, each one
validates the whole matrix)."""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ortdoctor.decide.matrix.load import load_matrix
from ortdoctor.decide.matrix.model import Matrix, MatrixError
from tests.fuzz.bounds import EXAMPLES, FUZZ

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_TEXT = (ROOT / "compat_matrix.yaml").read_text(encoding="utf-8")
SHIPPED = yaml.safe_load(SHIPPED_TEXT)
FUZZ_HEAVY = settings(FUZZ, max_examples=max(10, EXAMPLES // 5))  # each validates the whole matrix

scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True)
           | st.text(max_size=20) | st.sampled_from(["1.20", "12.x", "13.0", "9", "required", "lazy", "wheel",
                                                     "doc", "libcudart.so.13", "1.31.1", "", "cpu"]))
keys = st.sampled_from(["schema", "releases", "cuda_majors", "cudnn_majors", "torch", "feeds", "line",
                        "versions", "cuda", "cudnn_major", "libraries", "name", "soname", "load"]) | st.text(max_size=8)
documents = st.recursive(scalars, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(keys, inner, max_size=6),
                         max_leaves=40)


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ortdoctor-fuzz-matrix-") as d:
        yield Path(d)


def _load(path: Path) -> None:
    message: str | None
    try:
        matrix = load_matrix(path)
    except MatrixError as exc:
        message = str(exc)
    else:
        message = None
    if message is not None:
        assert str(path) in message  # the error always names the file
        return
    assert isinstance(matrix, Matrix)
    # a matrix that validates must also answer the questions the tool asks of it
    for version in ("1.31.1", "1.20.0", "garbage", "0.1"):
        matrix.release_for(version)
    for cuda, cudnn in ((13, 9), (12, 9), (12, 8), (11, 8), (99, None)):
        try:
            matrix.libraries_for(cuda, cudnn)
        except (KeyError, LookupError):
            pass
    matrix.recommend("12", None)
    matrix.recommend(None, "2.4")


@FUZZ
@given(documents)
def test_random_documents(scratch: Path, doc: Any) -> None:
    path = scratch / "random.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    _load(path)


@FUZZ
@given(st.binary(max_size=2048))
def test_random_bytes(scratch: Path, data: bytes) -> None:
    path = scratch / "bytes.yaml"
    path.write_bytes(data)
    _load(path)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


ALL_PATHS = [p for p in _paths(SHIPPED) if p]


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        node = node[k]
    return node


@FUZZ_HEAVY
@given(st.data())
def test_mutated_shipped_matrix(scratch: Path, data: st.DataObject) -> None:
    doc = copy.deepcopy(SHIPPED)
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        live = [p for p in ALL_PATHS if _exists(doc, p)]
        path = data.draw(st.sampled_from(live), label="path")
        parent, key = _get(doc, path[:-1]), path[-1]
        kind = data.draw(st.sampled_from(["replace", "delete", "duplicate", "wrap"]), label="kind")
        if kind == "replace":
            parent[key] = data.draw(documents, label="value")
        elif kind == "delete":
            del parent[key]
        elif kind == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        elif kind == "wrap":
            parent[key] = [parent[key]]
    path = scratch / "mutated.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    _load(path)


def _exists(doc: Any, path: tuple[Any, ...]) -> bool:
    try:
        _get(doc, path)
    except (KeyError, IndexError, TypeError):
        return False
    return True


LINES = SHIPPED_TEXT.splitlines(keepends=True)


@FUZZ_HEAVY
@given(st.data())
def test_text_mutations_of_the_shipped_matrix(scratch: Path, data: st.DataObject) -> None:
    lines = list(LINES)
    for _ in range(data.draw(st.integers(1, 6), label="edits")):
        i = data.draw(st.integers(0, len(lines) - 1), label="line")
        kind = data.draw(st.sampled_from(["delete", "duplicate", "insert", "dedent", "indent", "truncate"]),
                         label="kind")
        if kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "insert":
            lines.insert(i, data.draw(st.text(max_size=40), label="text") + "\n")
        elif kind == "dedent":
            lines[i] = lines[i].lstrip(" ")
        elif kind == "indent":
            lines[i] = "  " + lines[i]
        else:
            lines[i] = lines[i][: data.draw(st.integers(0, len(lines[i])), label="cut")]
    path = scratch / "text.yaml"
    path.write_text("".join(lines), encoding="utf-8")
    _load(path)


def test_shipped_matrix_loads() -> None:
    assert isinstance(load_matrix(ROOT / "compat_matrix.yaml"), Matrix)

"""Property tests for the error classifier (mutated real error texts from tests/data/errors) and the
model_check protobuf reader (mutated real ONNX models from tests/support/models.py): the classifier
never raises; ``inspect_model`` never raises for any file content (a bad file is a ``problem``).

Budget: ORTDOCTOR_FUZZ_EXAMPLES examples per test (default 200)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ortdoctor.diagnose import classify
from ortdoctor.prove.model_check.inspect import ModelInspection, inspect_model
from tests.fuzz.bounds import FUZZ

ROOT = Path(__file__).resolve().parents[2]
CORPUS = {p.name: p.read_text(encoding="utf-8", errors="replace") for p in sorted((ROOT / "tests/data/errors").glob("*.txt"))}

NOISE = st.sampled_from(["\x1b[0;93m", "\x1b[m", "\r", "\n", "\t", "\0", "\ufffd", "…", "'", '"', ":", "(", ")",
                         "libcudnn.so.", "libcudart.so.1", ".dll", "CUDA failure ", "error: ", "999", "-1",
                         "9" * 30, "Require cuDNN ", "and CUDA ", ".*", "LoadLibrary failed with error 126",
                         "[E:onnxruntime:", "] ", "\\", "/"]) | st.text(max_size=12)


def _classify_ok(text: str, **kwargs: object) -> None:
    matches = classify.classify(text, **kwargs)  # type: ignore[arg-type]
    for m in matches:
        assert isinstance(m, classify.Match)
        json.dumps(m.to_json())
    classify.finding_ids(text, **kwargs)


@FUZZ
@given(data=st.data(), names=st.lists(st.sampled_from(sorted(CORPUS)), min_size=1, max_size=3))
def test_classifier_on_mutated_real_errors(data: st.DataObject, names: list[str]) -> None:
    text = "\n".join(CORPUS[n] for n in names)
    for _ in range(data.draw(st.integers(0, 10), label="edits")):
        if not text:
            break
        at = data.draw(st.integers(0, len(text)), label="at")
        kind = data.draw(st.sampled_from(["insert", "delete", "swapcase", "truncate", "repeat"]), label="kind")
        if kind == "insert":
            text = text[:at] + data.draw(NOISE, label="noise") + text[at:]
        elif kind == "delete":
            text = text[:at] + text[at + data.draw(st.integers(1, 40), label="n"):]
        elif kind == "swapcase":
            text = text[:at] + text[at:at + 30].swapcase() + text[at + 30:]
        elif kind == "truncate":
            text = text[:at]
        else:
            text = text[:at] + text[at:at + 200] * 3 + text[at:]
    contexts: list[dict[str, Any]] = [{}, {"cuda_major": 13, "cudnn_major": 9}, {"cuda_major": 12},
                                      {"cuda_major": -1, "cudnn_major": 10**9, "ort_version": "garbage"}]
    ctx = data.draw(st.sampled_from(contexts), label="context")
    _classify_ok(text, **ctx)


@FUZZ
@given(st.text(max_size=4000))
def test_classifier_on_random_text(text: str) -> None:
    _classify_ok(text)
    _classify_ok(text, cuda_major=13, cudnn_major=9, ort_version="1.31.1")


def test_classifier_on_a_huge_single_line() -> None:
    text = "libcudnn.so.9: cannot open shared object file " * 20000 + "\n"
    assert classify.finding_ids(text)


# --------------------------------------------------------------------------------------------------
# The ONNX protobuf reader
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ortdoctor-fuzz-models-") as d:
        yield Path(d)


@pytest.fixture(scope="module")
def models() -> dict[str, bytes]:
    pytest.importorskip("onnx")
    from tests.support import models as builders

    return {name: builder().SerializeToString() for name, builder in builders.GOOD.items()}


def _inspect(path: Path) -> ModelInspection:
    result = inspect_model(path)
    assert isinstance(result, ModelInspection)
    assert result.problem in (None, "invalid", "truncated", "unreadable") or isinstance(result.problem, str)
    return result


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


@FUZZ
@given(data=st.data(), name=st.sampled_from(["float", "quantized", "loop", "shape"]))
def test_inspect_mutated_real_models(scratch: Path, models: dict[str, bytes], data: st.DataObject, name: str) -> None:
    blob = bytearray(models[name])
    for _ in range(data.draw(st.integers(1, 6), label="edits")):
        if not blob:
            break
        at = data.draw(st.integers(0, len(blob) - 1), label="at")
        kind = data.draw(st.sampled_from(["flip", "byte", "varint", "truncate", "splice", "delete"]), label="kind")
        if kind == "flip":
            blob[at] ^= 1 << data.draw(st.integers(0, 7), label="bit")
        elif kind == "byte":
            blob[at] = data.draw(st.integers(0, 255), label="value")
        elif kind == "varint":  # a length or tag field replaced by an extreme varint
            value = data.draw(st.sampled_from([0, 1, 2**31 - 1, 2**32, 2**63 - 1, 2**64 - 1, 2**70]), label="v")
            blob[at:at + 1] = _varint(value)
        elif kind == "truncate":
            del blob[at:]
        elif kind == "splice":
            blob[at:at] = data.draw(st.binary(max_size=64), label="bytes")
        else:
            del blob[at:at + data.draw(st.integers(1, 64), label="n")]
    path = scratch / "mutated.onnx"
    path.write_bytes(bytes(blob))
    _inspect(path)


@FUZZ
@given(st.binary(max_size=2048))
def test_inspect_random_bytes(scratch: Path, blob: bytes) -> None:
    path = scratch / "random.onnx"
    path.write_bytes(blob)
    _inspect(path)


def test_inspect_unmutated_control(scratch: Path, models: dict[str, bytes]) -> None:
    for name, blob in models.items():
        path = scratch / f"{name}.onnx"
        path.write_bytes(blob)
        assert _inspect(path).ok, name

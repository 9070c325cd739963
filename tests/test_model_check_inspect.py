"""The parent-side model reader: real models written by the ``onnx`` package, and broken files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from ortdoctor.diagnose import model as mf
from ortdoctor.prove.model_check import inspect
from ortdoctor.prove.model_check.inspect import inspect_model, parse_input_shape
from tests.support import models

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return models.build_good(tmp_path_factory.mktemp("good"))


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return models.build_bad(tmp_path_factory.mktemp("bad"))


def test_float_model_header(good: dict[str, Path]) -> None:
    ins = inspect_model(good["float"])
    assert ins.ok
    assert ins.ir_version == models.IR_VERSION
    assert ins.opsets == {"": models.OPSET}
    assert ins.producer == "ortdoctor-tests"
    assert [(i.name, i.dtype, i.shape, i.dynamic_dims) for i in ins.inputs] == [("X", "float32", ("batch", 64), (0,))]
    assert ins.op_types == {"Add": 1, "MatMul": 1, "Relu": 1}
    assert ins.initializer_count == 2
    assert ins.initializer_bytes == (64 * 64 + 64) * 4
    assert ins.control_flow_nodes == ()
    assert ins.external_refs == ()


def test_quantized_ops_are_seen(good: dict[str, Path]) -> None:
    ins = inspect_model(good["quantized"])
    assert ins.quantized_ops == {"DynamicQuantizeLinear": 1, "MatMulInteger": 1}


def test_loop_and_its_body_are_seen(good: dict[str, Path]) -> None:
    ins = inspect_model(good["loop"])
    assert ins.control_flow_nodes == ("Loop (loop)",)
    assert ins.subgraph_op_types == {"Add": 1, "Identity": 1}
    assert ins.node_count == 1
    assert ins.node_count_all == 3
    assert ins.dynamic_inputs == ()


def test_shape_subgraph_nodes_are_told_apart(good: dict[str, Path]) -> None:
    ins = inspect_model(good["shape"])
    assert ins.shape_nodes == ("shape", "gather_batch", "unsqueeze_batch", "concat_shape")


def test_external_data_present(tmp_path: Path) -> None:
    ins = inspect_model(models.build_external_ok(tmp_path))
    assert ins.ok
    assert [r.tensor for r in ins.external_refs] == ["W", "B"]
    assert all(r.exists and r.problem is None for r in ins.external_refs)
    assert ins.external_bytes == (64 * 64 + 64) * 4
    assert mf.inspection_findings(ins) == []


@pytest.mark.parametrize(("case", "finding"), [
    ("not_onnx", "model-invalid"),
    ("truncated", "model-truncated"),
    ("external_missing", "model-external-data-missing"),
])
def test_bad_files_become_findings(bad: dict[str, Path], case: str, finding: str) -> None:
    found = mf.inspection_findings(inspect_model(bad[case]))
    assert [f.id for f in found] == [finding]
    assert found[0].severity == "error"
    assert str(bad[case]) in found[0].detail
    assert found[0].fix


def test_external_missing_names_the_file(bad: dict[str, Path]) -> None:
    (f,) = mf.inspection_findings(inspect_model(bad["external_missing"]))
    assert "model.onnx.data" in f.detail
    assert "model.onnx.data" in (f.fix or "")


def test_opset_too_new_is_read_not_judged(bad: dict[str, Path]) -> None:
    # Whether opset 99 is too new is onnxruntime's call (its error text); the header just reports it.
    ins = inspect_model(bad["opset_too_new"])
    assert ins.ok
    assert ins.opsets == {"": 99}


def test_every_prefix_of_a_model_is_handled(good: dict[str, Path], tmp_path: Path) -> None:
    data = good["float"].read_bytes()
    cut = tmp_path / "cut.onnx"
    for n in range(len(data)):
        cut.write_bytes(data[:n])
        ins = inspect_model(cut)
        assert ins.problem in ("invalid", "truncated"), n


def test_unreadable_paths(tmp_path: Path) -> None:
    assert inspect_model(tmp_path / "nope.onnx").problem == "unreadable"
    assert inspect_model(tmp_path).problem == "unreadable"
    (tmp_path / "empty.onnx").write_bytes(b"")
    assert inspect_model(tmp_path / "empty.onnx").problem == "invalid"
    assert [f.id for f in mf.inspection_findings(inspect_model(tmp_path / "nope.onnx"))] == ["model-invalid"]


def test_external_location_outside_model_dir(tmp_path: Path) -> None:
    model = models.float_matmul()
    for init in model.graph.initializer:
        onnx.external_data_helper.set_external_data(init, location="../elsewhere.bin")
        init.ClearField("raw_data")
        init.data_location = onnx.TensorProto.EXTERNAL
    (tmp_path / "m").mkdir()
    path = tmp_path / "m" / "model.onnx"
    path.write_bytes(model.SerializeToString())
    refs = inspect_model(path).missing_external
    assert refs
    assert all(r.problem == "points outside the model's directory" for r in refs)


@pytest.mark.parametrize(("text", "expected"), [
    ("input=1x3x224x224", ("input", (1, 3, 224, 224))),
    ("a=b=2X3", ("a=b", (2, 3))),
    ("x=5", ("x", (5,))),
])
def test_parse_input_shape(text: str, expected: tuple[str, tuple[int, ...]]) -> None:
    assert parse_input_shape(text) == expected


@pytest.mark.parametrize("text", ["input", "=1x2", "x=", "x=1xa", "x=-1x2"])
def test_parse_input_shape_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="--input-shape"):
        parse_input_shape(text)


# --------------------------------------------------------------------------------------------------
# A model rewritten while it is read (an exporter truncates and writes it in place)
# --------------------------------------------------------------------------------------------------
_REWRITE_DURING_WALK = """
import os, sys
from ortdoctor.prove.model_check import inspect

path, how = sys.argv[1], sys.argv[2]
walk = inspect._fields
done = []

def rewrite_then_walk(*args):
    if not done:  # once, when the walk has begun: the file was opened and its size taken
        done.append(1)
        data = open(path, "rb").read()
        with open(path, "r+b") as f:
            if how == "truncate":
                f.truncate(8192)  # what `cat new > model.onnx` does first, caught two pages in
            elif how == "grow":
                f.seek(0, 2)
                f.write(b"\\0" * 4096)
            else:  # the same size, new bytes
                f.write(data)
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    return walk(*args)

inspect._fields = rewrite_then_walk
ins = inspect.inspect_model(path)
print(ins.problem, ins.problem_detail)
"""


@pytest.mark.parametrize("how", ["truncate", "grow", "same-size"])
def test_model_rewritten_during_the_check(tmp_path: Path, how: str) -> None:
    """Reported as a file that changed (model-invalid, exit 2), never read from a mapping: a page past the
    new end of a mapped file is SIGBUS, which kills the process."""
    model = tmp_path / "live.onnx"
    model.write_bytes((ROOT / "tests" / "data" / "models" / "bert_dynamo.onnx").read_bytes())  # 350 KB
    proc = subprocess.run([sys.executable, "-c", _REWRITE_DURING_WALK, str(model), how], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, (proc.returncode, proc.stderr)  # -7: SIGBUS
    assert proc.stdout.startswith("unreadable the file changed while it was read"), proc.stdout


def test_large_payloads_are_skipped_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 64 MB initializer: the walk reads its head and skips its raw data by length."""
    big = onnx.helper.make_tensor("w", onnx.TensorProto.FLOAT, [16 << 20], vals=b"\0" * (64 << 20), raw=True)
    graph = onnx.helper.make_graph([onnx.helper.make_node("Identity", ["w"], ["y"])], "g", [],
                                   [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                                   initializer=[big])
    path = tmp_path / "big.onnx"
    onnx.save(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)]), path)
    read: list[int] = []
    original = inspect._Source.read

    def counting(self: inspect._Source, start: int, stop: int, need: int) -> bytes:
        data = original(self, start, stop, need)
        read.append(len(data))
        return data

    monkeypatch.setattr(inspect._Source, "read", counting)
    ins = inspect_model(path)
    assert ins.ok, ins.problem_detail
    assert ins.initializer_bytes == 64 << 20
    assert sum(read) < 1 << 20

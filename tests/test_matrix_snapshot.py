"""The shipped matrix's snapshot: up to date, equal to the YAML's parse, and used only for those bytes."""

from __future__ import annotations

import marshal
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ortdoctor.decide.matrix import load as matrix_module
from ortdoctor.decide.matrix.load import default_matrix_path, load_matrix, snapshot_path
from ortdoctor.decide.matrix.model import MatrixError

REPO = Path(__file__).resolve().parent.parent


def test_snapshot_is_up_to_date() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_matrix_snapshot.py"), "--check"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr


def test_snapshot_and_yaml_give_equal_matrices(monkeypatch: pytest.MonkeyPatch) -> None:
    from_snapshot = matrix_module._load(Path(default_matrix_path()))
    # The same bytes with no snapshot to match: parsed and validated.
    monkeypatch.setattr(matrix_module, "_from_snapshot", lambda fingerprint: None)
    from_yaml = matrix_module._load(Path(default_matrix_path()))
    assert from_snapshot == from_yaml
    assert list(from_snapshot.cuda_majors) == list(from_yaml.cuda_majors)  # integer keys, same order


def test_shipped_matrix_loads_without_pyyaml() -> None:
    code = ("import sys\nfrom ortdoctor.decide.matrix.load import load_matrix\nm = load_matrix()\n"
            "assert m.release_for('1.31.1') is not None\nprint('yaml' in sys.modules)\n")
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_edited_copy_is_parsed_as_yaml(tmp_path: Path) -> None:
    edited = tmp_path / "matrix.yaml"
    text = Path(default_matrix_path()).read_text(encoding="utf-8")
    edited.write_text(text.replace("schema: 1", "schema: 2", 1), encoding="utf-8")
    with pytest.raises(MatrixError, match="unsupported schema version 2"):
        load_matrix(edited)


def test_unchanged_copy_matches_the_shipped_file(tmp_path: Path) -> None:
    copy = tmp_path / "copy.yaml"
    shutil.copyfile(Path(default_matrix_path()), copy)
    m = load_matrix(copy)
    assert m.path == str(copy)
    assert m.releases == load_matrix().releases


@pytest.mark.parametrize("cut", [80, 300, -1])
def test_corrupt_snapshot_falls_back_to_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: int) -> None:
    bad = tmp_path / "matrix_snapshot.marshal"
    good = Path(snapshot_path()).read_bytes()
    bad.write_bytes(good[:cut])  # the header matches, the model is cut short
    monkeypatch.setattr(matrix_module, "snapshot_path", lambda: str(bad))
    assert matrix_module._load(Path(default_matrix_path())) == load_matrix()
    bad.write_bytes(good[:-1] + b"\xff")  # a byte marshal reads as an unknown type
    assert matrix_module._load(Path(default_matrix_path())) == load_matrix()
    bad.unlink()
    assert matrix_module._load(Path(default_matrix_path())) == load_matrix()


def test_snapshot_of_another_format_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "matrix_snapshot.marshal"
    good = Path(snapshot_path()).read_bytes()
    other.write_bytes(good.replace(b"snapshot 3 ", b"snapshot 2 ", 1))
    monkeypatch.setattr(matrix_module, "snapshot_path", lambda: str(other))
    assert matrix_module._from_snapshot(matrix_module._fingerprint(Path(default_matrix_path()).read_bytes())) is None


def test_the_model_classes_have_no_post_init() -> None:
    """The snapshot sets each object's state directly (see ``load._decode``): a ``__post_init__`` would be
    skipped."""
    assert [name for name, cls in matrix_module._CLASSES.items() if hasattr(cls, "__post_init__")] == []


def test_the_shipped_snapshot_decodes() -> None:
    """A model class missing from ``_CLASSES`` makes the snapshot unreadable: the loader then parses the YAML on
    every start (slowly, and with PyYAML), and nothing else fails."""
    raw = Path(default_matrix_path()).read_bytes()
    assert matrix_module._from_snapshot(matrix_module._fingerprint(raw)) is not None


def test_snapshot_keeps_integer_keys_and_tuples() -> None:
    encoded = matrix_module._encode({"a": {12: "x", 13: {"b": [1, None, True, 1.5]}}})
    loaded = marshal.loads(marshal.dumps(encoded, matrix_module.SNAPSHOT_MARSHAL_VERSION))
    assert matrix_module._decode(loaded) == {"a": {12: "x", 13: {"b": (1, None, True, 1.5)}}}
    with pytest.raises(TypeError):
        matrix_module._encode({1: "x", "y": 2})
    with pytest.raises(TypeError):
        matrix_module._encode({"@": "x"})


def test_snapshot_bytes_do_not_depend_on_object_identity() -> None:
    """marshal's version 2 writes no back-references: equal values give equal bytes, however shared."""
    shared = ("libcudart.so.13", "x")
    a = marshal.dumps({"p": shared, "q": shared}, matrix_module.SNAPSHOT_MARSHAL_VERSION)
    apart = {"p": tuple("libcudart.so.13 x".split()), "q": tuple("libcudart.so.13 x".split())}  # two objects
    assert apart["p"] is not apart["q"]
    b = marshal.dumps(apart, matrix_module.SNAPSHOT_MARSHAL_VERSION)
    assert a == b

"""ortdoctor.formats.npy on crafted and special files: NpyError and nothing else, never a hang; and the
``check --model --input NAME=FILE`` option that reads it in the parent: exit 2 with the reason."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ortdoctor.formats.npy import NpyError, read_npy_header
from tests.support import crafted

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "tests" / "data" / "models" / "cnn.onnx"


@pytest.mark.parametrize("name", sorted(crafted.NPY_CRAFTED))
def test_crafted_headers_raise_npy_error(tmp_path: Path, name: str) -> None:
    """A header nested beyond the literal parser (RecursionError, MemoryError before), a file that ends in
    its length or its header (struct.error), a 4 GB header length."""
    path = tmp_path / f"{name}.npy"
    path.write_bytes(crafted.NPY_CRAFTED[name])
    with pytest.raises(NpyError):
        read_npy_header(path)


def test_a_good_header_in_each_version(tmp_path: Path) -> None:
    text = b"{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }"
    for version in (1, 2, 3):
        path = tmp_path / f"v{version}.npy"
        path.write_bytes(crafted.npy_file(text + b" " * 9 + b"\n", version))
        assert read_npy_header(path).shape == (2, 3)


def test_unopenable_files_raise_npy_error(tmp_path: Path) -> None:
    with pytest.raises(NpyError, match="No such file"):
        read_npy_header(tmp_path / "absent.npy")
    with pytest.raises(NpyError, match="not a regular file"):
        read_npy_header(tmp_path)
    with pytest.raises(NpyError, match="not a regular file"):
        read_npy_header("/dev/zero")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_check_input_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    """``--input x=FIFO``: the parent's plain open() waited for a writer forever; now exit 2 at once."""
    fifo = tmp_path / "x.npy"
    os.mkfifo(fifo)
    with pytest.raises(NpyError, match="not a regular file"):
        read_npy_header(fifo)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ORTDOCTOR_CACHE": "0"}
    proc = subprocess.run([sys.executable, "-m", "ortdoctor", "check", "--no-smoke", "--model", str(MODEL),
                           "--input", f"x={fifo}"], capture_output=True, text=True, timeout=120, env=env,
                          cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "not a regular file" in proc.stderr
    assert "Traceback" not in proc.stderr

"""Bad command lines and bad input to the CLI: a clear message and exit 2, never a traceback."""

from __future__ import annotations

import os

import pytest

from tests.faults.conftest import Case

BAD_OPTIONS = {
    "check-unknown-option": ("check", "--bogus"),
    "check-negative-device": ("check", "--device-id", "-1"),
    "check-device-not-a-number": ("check", "--device-id", "zero"),
    "check-zero-timeout": ("check", "--timeout", "0"),
    "check-provider-option-without-value": ("check", "--no-smoke", "--provider-option", "novalue"),
    "preload-unknown-option": ("preload", "--cuda-version", "13"),
    "matrix-bad-cuda": ("matrix", "--cuda", "thirteen"),
    "matrix-bad-torch": ("matrix", "--torch", "latest!"),
    "matrix-ort-and-cuda": ("matrix", "--ort", "1.31.1", "--cuda", "13"),
    "unknown-command": ("diagnose",),
    "hook-unknown-subcommand": ("hook", "reinstall"),
    "completion-unknown-shell": ("completion", "tcsh"),
}


@pytest.mark.parametrize("name", list(BAD_OPTIONS))
def test_bad_options_exit_2(case: Case, name: str) -> None:
    case.gpu_site()
    res = case.run(*BAD_OPTIONS[name])
    assert res.returncode == 2, res.text
    assert res.stderr.strip()


@pytest.mark.parametrize("command", ["check", "preload"])
def test_directory_that_does_not_exist(case: Case, command: str) -> None:
    case.gpu_site()
    missing = case.base / "no-such-directory"
    args = ("check", "--json", "--no-smoke") if command == "check" else ("preload", "--json")
    res = case.run(*args, "--directory", str(missing))
    assert res.returncode == 2, res.text
    assert str(missing) in res.stderr
    assert res.stdout == ""


def test_relative_directory_that_does_not_exist_under_onnxruntime(case: Case) -> None:
    site = case.gpu_site()
    (case.cwd / "lib").mkdir()  # exists in the cwd, but relative means the onnxruntime package dir
    res = case.run("preload", "--json", "--directory", "lib")
    assert res.returncode == 2, res.text
    assert str(site / "onnxruntime" / "lib") in res.stderr


def test_directory_that_is_a_file(case: Case) -> None:
    site = case.gpu_site()
    res = case.run("preload", "--json", "--directory", str(site / "onnxruntime" / "__init__.py"))
    assert res.returncode == 2, res.text
    assert "__init__.py" in res.stderr


def test_relative_directory_without_onnxruntime(case: Case) -> None:
    res = case.run("preload", "--json", "--directory", "lib", sites=[])
    assert res.returncode == 2, res.text
    assert "absolute" in res.stderr


def test_explain_unknown_id_and_garbage_input(case: Case) -> None:
    res = case.run("explain", "no-such-finding-id", "--no-here")
    assert res.returncode == 2  # an id that does not exist is an input error (the README's exit codes)
    assert "not a known finding id" in res.stderr
    assert "explain --list" in res.stderr
    garbage = os.urandom(64 * 1024) + b"\x00\xff" + b"libcudnn.so.9: cannot open shared object file" * 3
    res = case.run("explain", "-", "--json", "--no-here", stdin=garbage)
    assert res.returncode in (0, 1)
    res = case.run("explain", "-", "--no-here", stdin=b"\xff" * 3_000_000)
    assert res.returncode == 1


def test_matrix_unknown_ort_versions(case: Case) -> None:
    res = case.run("matrix", "--ort", "garbage")
    assert res.returncode == 2
    assert "PEP 440" in res.stderr
    res = case.run("matrix", "--ort", "0.1.0")
    assert res.returncode == 1
    assert "older than every release line" in res.stderr
    res = case.run("matrix", "--ort", "1.99.0", "--json")
    assert res.returncode in (0, 1)
    assert res.stdout or res.stderr




@pytest.mark.parametrize("name", ["missing", "not_onnx", "truncated", "external_missing", "empty", "fifo"])
def test_check_with_a_bad_model(case: Case, name: str) -> None:
    pytest.importorskip("onnx")
    from tests.support import models

    case.gpu_site()
    bad = models.build_bad(case.base / "models")
    if name == "missing":
        path = case.base / "models" / "no-such-model.onnx"
    elif name == "empty":
        path = case.base / "models" / "empty.onnx"
        path.write_bytes(b"")
    elif name == "fifo":
        path = case.base / "models" / "fifo.onnx"
        os.mkfifo(path)
    else:
        path = bad[name]
    res = case.run("check", "--json", "--no-smoke", "--model", str(path), timeout=60)
    assert res.returncode == 2, res.text
    assert str(path.name) in res.text


def test_model_options_misused(case: Case) -> None:
    case.gpu_site()
    res = case.run("check", "--no-smoke", "--input-shape", "x=1x3")
    assert res.returncode == 2
    assert "--model" in res.stderr
    model = case.base / "m.onnx"
    model.write_bytes(b"\x08\x08")
    for shape in ("x=1xtwo", "=1x3", "x=-1x3", "x"):
        res = case.run("check", "--no-smoke", "--model", str(model), "--input-shape", shape)
        assert res.returncode == 2, (shape, res.text)
        assert "--input-shape" in res.stderr
    res = case.run("check", "--no-smoke", "--model", str(case.base))
    assert res.returncode == 2

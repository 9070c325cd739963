"""A matrix file that cannot be used, given by --matrix or ORTDOCTOR_MATRIX: exit 2, naming the file and
the key path; never a traceback."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.faults import helpers
from tests.faults.conftest import Case
from tests.faults.helpers import ROOT, Result

SHIPPED = ROOT / "compat_matrix.yaml"
FIFO_TIMEOUT = 20  # seconds: a healthy run takes well under one; a blocked open() never returns


def _shipped() -> Any:
    return yaml.safe_load(SHIPPED.read_text(encoding="utf-8"))


def _write(case: Case, name: str, data: Any) -> Path:
    path = case.base / "matrices" / name
    path.parent.mkdir(exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    elif isinstance(data, str):
        path.write_text(data)
    else:
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _assert_usage_error(res: Result, path: Path, key: str | None = None) -> None:
    assert res.returncode == 2, res.text
    assert res.stdout == ""  # no half report on stdout
    assert str(path) in res.stderr
    if key is not None:
        assert key in res.stderr, res.stderr


def _duplicate_version() -> Any:
    data = _shipped()
    versions = data["releases"][0]["versions"]
    versions.append(versions[0])
    return data


def _wrong_types() -> Any:
    data = _shipped()
    data["releases"][1]["cudnn_major"] = "nine"
    return data


BROKEN = {
    "not-yaml": ("matrix: [unclosed\n  - {a: b\n", None),
    "wrong-top-level-type": ("- just\n- a list\n", None),
    "releases-not-a-list": ({"schema": 1, "releases": 5}, None),
    "wrong-type-in-a-row": (_wrong_types, "releases[1].cudnn_major"),
    "duplicate-version": (_duplicate_version, "releases[0].versions"),
    "empty-file": ("", None),
    "not-utf8": (b"schema: 1\nreleases: \xff\xfe\x00\n", None),
    "unsupported-schema": ({"schema": 99}, "schema"),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_check_with_a_broken_matrix_option(case: Case, name: str) -> None:
    case.gpu_site()
    content, key = BROKEN[name]
    path = _write(case, f"{name}.yaml", content() if callable(content) else content)
    _assert_usage_error(case.run("check", "--json", "--no-smoke", "--matrix", str(path)), path, key)


@pytest.mark.parametrize("name", ["not-yaml", "duplicate-version"])
def test_broken_matrix_from_the_environment(case: Case, name: str) -> None:
    case.gpu_site()
    content, key = BROKEN[name]
    path = _write(case, f"{name}.yaml", content() if callable(content) else content)
    env = {"ORTDOCTOR_MATRIX": str(path)}
    _assert_usage_error(case.run("check", "--json", "--no-smoke", env=env), path, key)
    _assert_usage_error(case.run("matrix", env=env), path, key)
    _assert_usage_error(case.run("matrix", "--json", "--ort", "1.31.1", env=env), path, key)


def test_matrix_file_that_does_not_exist(case: Case) -> None:
    missing = case.base / "no-such-matrix.yaml"
    _assert_usage_error(case.run("check", "--json", "--no-smoke", env={"ORTDOCTOR_MATRIX": str(missing)}), missing)
    _assert_usage_error(case.run("matrix", "--matrix", str(missing)), missing)


def test_matrix_option_is_a_directory(case: Case) -> None:
    res = case.run("check", "--json", "--no-smoke", "--matrix", str(case.base))
    assert res.returncode == 2
    assert "--matrix" in res.stderr
    res = case.run("matrix", "--matrix", str(case.base))
    assert res.returncode == 2
    assert str(case.base) in res.stderr


def test_matrix_with_exponential_aliases(case: Case) -> None:
    """A YAML 'billion laughs' document: refused or rejected quickly, never expanded."""
    lines = ["a0: &a0 ['1.0', '1.0', '1.0', '1.0', '1.0', '1.0', '1.0', '1.0', '1.0']"]
    for i in range(1, 9):
        refs = ", ".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    lines.append("schema: 1\nreleases: *a8\n")
    path = _write(case, "laughs.yaml", "\n".join(lines))
    _assert_usage_error(case.run("matrix", "--matrix", str(path), timeout=60), path)


def test_preload_refuses_a_broken_matrix_with_its_key_path(case: Case) -> None:
    case.gpu_site()
    path = _write(case, "broken.yaml", "matrix: [unclosed\n")
    _assert_usage_error(case.run("preload", "--json", "--directory", "", env={"ORTDOCTOR_MATRIX": str(path)}), path)
    _assert_usage_error(case.run("preload", "--matrix", str(path), timeout=60), path)


def _not_a_matrix_file(case: Case, kind: str) -> Path:
    """A path named like a matrix that is a FIFO (no writer: a plain open() blocks forever), a device that
    never ends, or a 100 GB sparse file."""
    if kind == "dev-zero":
        return Path("/dev/zero")
    path = case.base / "matrices" / f"{kind}.yaml"
    path.parent.mkdir(exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        with open(path, "wb") as f:
            f.truncate(100 << 30)
    return path


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "sparse"])
def test_matrix_that_is_a_fifo_a_device_or_huge(case: Case, kind: str) -> None:
    """Refused before it is read (a FIFO or device) or by its size: exit 2 at once, never a hang or a
    read until memory runs out."""
    case.gpu_site()
    path = _not_a_matrix_file(case, kind)
    _assert_usage_error(case.run("check", "--json", "--no-smoke", "--matrix", str(path), timeout=FIFO_TIMEOUT), path)
    _assert_usage_error(case.run("matrix", "--matrix", str(path), timeout=FIFO_TIMEOUT), path)
    _assert_usage_error(case.run("check", "--json", "--no-smoke", env={"ORTDOCTOR_MATRIX": str(path)},
                                 timeout=FIFO_TIMEOUT), path)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_hook_falls_back_to_the_shipped_matrix_for_a_fifo_or_device(case: Case, kind: str) -> None:
    """ORTDOCTOR_MATRIX naming a FIFO or /dev/zero inside the user's program: one warning, the shipped
    matrix, and the libraries preloaded."""
    case.gpu_site()
    path = _not_a_matrix_file(case, kind)
    script = case.base / "hook.py"
    script.write_text("import ortdoctor.hook as h\nprint(sorted(x.soname for x in h.result.loaded))\n")
    hook = helpers.run_cli([], sites=[case.site], cwd=case.cwd, env={"ORTDOCTOR_CACHE": "0", "ORTDOCTOR_MATRIX": str(path)},
                           argv0=[sys.executable, str(script)], timeout=FIFO_TIMEOUT)
    assert hook.returncode == 0, hook.text
    assert "the shipped matrix was used instead" in hook.stderr
    assert "libcudart.so.13" in hook.stdout

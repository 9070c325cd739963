"""`ortdoctor explain`: ids, error texts and logs on stdin, and its exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ortdoctor.cli.main import cli
from ortdoctor.core.catalog import CATALOG
from tests.test_classify import CORPUS, load_case


def _run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["explain", *args], input=stdin)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_each_corpus_text_on_stdin_is_explained(path: Path) -> None:
    expect, text = load_case(path)
    code, out, _ = _run("-", "--no-here", stdin=text)
    assert code == 0
    assert out.startswith(f"[{expect}]")
    assert "Why:" in out
    assert "Fix:" in out
    assert "Seen:" in out


@pytest.mark.parametrize("path", CORPUS[:5], ids=[p.stem for p in CORPUS[:5]])
def test_json_output(path: Path) -> None:
    expect, text = load_case(path)
    code, out, _ = _run("-", "--no-here", "--json", stdin=text)
    data = json.loads(out)
    assert code == 0
    assert data["input"] == "text"
    assert data["matches"][0]["id"] == expect


def test_text_as_an_argument() -> None:
    code, out, _ = _run("--no-here", "CUDA failure 101: invalid device ordinal")
    assert code == 0
    assert out.startswith("[invalid-device-ordinal]")


@pytest.mark.parametrize("fid", sorted(CATALOG))
def test_every_catalog_id_is_documented(fid: str) -> None:
    code, out, _ = _run(fid, "--no-here")
    assert code == 0
    assert out.startswith(f"{fid}: ")
    assert "Fix:" in out


def test_local_id_is_documented() -> None:
    code, out, _ = _run("cuda-ep-fell-back-to-cpu", "--no-here")
    assert code == 0
    assert "Fix:" in out


def test_nothing_recognised_exits_1() -> None:
    code, out, err = _run("-", "--no-here", stdin="everything is fine\n")
    assert code == 1
    assert out == ""
    assert "no known" in err


def test_no_argument_is_a_usage_error() -> None:
    code, _, err = _run()
    assert code == 2
    assert "finding id" in err


def test_here_says_something_about_this_environment() -> None:
    # Inspection only (no smoke session); whatever the environment, the answer is a sentence, not a crash.
    code, out, _ = _run("CUDA failure 100: no CUDA-capable device is detected")
    assert code == 0
    assert "This environment" in out

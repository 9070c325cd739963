"""Suppressions: `# ortdoctor: ignore[ID]` at a finding's line (or alone on the line above) and
`[tool.ortdoctor] ignore = [...]` silence a finding; it leaves the exit code alone, `--show-suppressed`
lists it, SARIF marks it with `suppressions`. This repository's own `gpu` extra is one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ortdoctor.cli.lint import command
from ortdoctor.doctor.lint import lint_paths

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = "tests/data/lint/"


def _ids(findings: object) -> list[tuple[str, int]]:
    return [(f.finding.id, f.where.line) for f in findings]  # type: ignore[attr-defined]


def test_a_comment_at_the_line_or_alone_above_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "requirements.txt").write_text(
        "onnxruntime-gpu  # ortdoctor: ignore[lint-ort-unpinned]\n"
        "# both on purpose: ortdoctor: ignore[lint-ort-cpu-and-gpu, lint-ort-unpinned]\n"
        "onnxruntime\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    report = lint_paths(["."])
    assert report.findings == ()
    assert [(q.finding.finding.id, q.finding.where.line, q.kind, q.by.line) for q in report.suppressed] == [
        ("lint-ort-unpinned", 1, "inSource", 1), ("lint-ort-cpu-and-gpu", 3, "inSource", 2)]


def test_a_comment_after_another_requirement_speaks_for_that_one(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "requirements.txt").write_text(
        "numpy  # ortdoctor: ignore[lint-ort-unpinned]\nonnxruntime-gpu\n"
        "onnxruntime-gpu; python_version < '3.9'  # ortdoctor: ignore[lint-ort-cuda-mismatch]\n",
        encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    report = lint_paths(["."])
    assert ("lint-ort-unpinned", 2) in _ids(report.findings)
    assert not report.suppressed


def test_tool_ortdoctor_ignore_and_an_unknown_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "requirements.txt").write_text("onnxruntime-gpu\n", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[tool.ortdoctor]\nignore = ["lint-ort-unpinned"]\n',
                                             encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    report = lint_paths(["."])
    assert report.findings == ()
    assert not report.errors
    (q,) = report.suppressed
    assert (q.kind, q.by.file, q.by.line) == ("external", "pyproject.toml", 2)
    (tmp_path / "pyproject.toml").write_text('[tool.ortdoctor]\nignore = ["lint-ort-unpined"]\n',
                                             encoding="utf-8")
    report = lint_paths(["."])
    assert _ids(report.findings) == [("lint-ort-unpinned", 1)]
    assert report.errors == ("pyproject.toml:2: [tool.ortdoctor] ignore names no lint finding id: "
                             "'lint-ort-unpined'",)


def test_the_cli_exit_code_show_suppressed_and_sarif(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "requirements.txt").write_text(
        "onnxruntime  # ortdoctor: ignore[lint-ort-cpu-and-gpu]\nonnxruntime-gpu==1.20.2\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    plain = runner.invoke(command, ["--strict"])
    assert plain.exit_code == 0, plain.output
    assert "suppressed" not in plain.output
    shown = runner.invoke(command, ["--show-suppressed", "--json"])
    doc = json.loads(shown.output)
    assert doc["verdict"] == "ok"
    assert doc["findings"] == []
    assert [(s["id"], s["line"], s["suppressed_by"]) for s in doc["suppressed"]] == [
        ("lint-ort-cpu-and-gpu", 1, {"kind": "inSource", "file": "requirements.txt", "line": 1})]
    sarif = json.loads(runner.invoke(command, ["--format", "sarif"]).output)
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "lint-ort-cpu-and-gpu"
    assert result["suppressions"][0]["kind"] == "inSource"
    assert runner.invoke(command, ["--format", "github"]).output == ""


def test_this_repository_lints_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file of this repository outside the real files of other projects (tests/data/lint) lints
    clean: the `gpu` extra's open range is a choice its comment says."""
    monkeypatch.chdir(ROOT)
    report = lint_paths(["."])
    own = [f for f in report.findings if not f.where.file.startswith(FIXTURES)]
    assert own == []
    assert not report.errors
    assert [(q.finding.finding.id, q.finding.where.file) for q in report.suppressed
            if not q.finding.where.file.startswith(FIXTURES)] == [("lint-ort-unpinned", "pyproject.toml")]

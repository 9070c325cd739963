"""A GitHub Actions job as a stack: what its ``run:`` steps pip-install, under the Pythons its
``actions/setup-python`` step sets up."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ortdoctor.doctor.lint import lint_paths
from ortdoctor.formats.github_workflow import read_workflow
from tests.fuzz.bounds import FUZZ, within

CI = """\
jobs:
  test:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        python-version: ["3.8", "3.9", "3.10"]
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: ${{ matrix.python-version }}
      - name: Install
        run: |
          python -m pip install --upgrade pip
          pip install -r requirements.txt \\
            pytest
      - run: pip uninstall -y onnxruntime
        working-directory: app
  docs:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/setup-python@v5
        with:
          python-version: "3.x"
      - run: pip install mkdocs
"""


def test_the_reader_keeps_setup_python_and_the_pip_commands_of_run_steps() -> None:
    jobs = {j.name: j for j in read_workflow(CI)}
    assert [(v.line, str(v)) for v in jobs["test"].pythons] == [(6, "3.8"), (6, "3.9"), (6, "3.10")]
    commands = [(d, c.line, c.uninstall, [(w.line, w.word) for w in c.words]) for d, c in jobs["test"].pip]
    assert commands == [("", 14, False, [(14, "--upgrade"), (14, "pip")]),
                        ("", 15, False, [(15, "-r"), (15, "requirements.txt"), (16, "pytest")]),
                        ("app", 17, True, [(17, "-y"), (17, "onnxruntime")])]
    assert [str(v) for v in jobs["docs"].pythons] == ["3.x"]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def test_a_requirement_the_job_installs_on_a_python_it_has_no_wheel_for(tmp_path: Path) -> None:
    """1.20 has wheels from Python 3.10; the job's matrix runs 3.8 and 3.9 too. The fix has a wheel for each."""
    _write(tmp_path, {".github/workflows/ci.yml": CI, "requirements.txt": "numpy\nonnxruntime-gpu==1.20.2\n"})
    report = lint_paths([str(tmp_path)])
    assert not report.errors
    (finding,) = report.findings
    assert (finding.finding.id, Path(finding.where.file).name, finding.where.line) == (
        "lint-ort-python-unsupported", "requirements.txt", 2)
    assert [(Path(r.file).name, r.line) for r in finding.related] == [("ci.yml", 6)]
    assert "actions/setup-python's 3.8 (job `test`)" in finding.finding.detail
    assert finding.replacement == "onnxruntime-gpu==1.19.2"


def test_a_requirements_file_is_found_from_the_step_working_directory(tmp_path: Path) -> None:
    """`working-directory: service` runs `pip install -r requirements.txt` in service/: the root's file (CPU
    only) is not the one installed."""
    ci = CI.replace("      - name: Install\n", "      - name: Install\n        working-directory: service\n")
    _write(tmp_path, {".github/workflows/ci.yml": ci, "requirements.txt": "onnxruntime==1.20.1\n",
                      "service/requirements.txt": "onnxruntime-gpu==1.20.2\n"})
    report = lint_paths([str(tmp_path)])
    assert [(f.finding.id, Path(f.where.file).parent.name) for f in report.findings] == [
        ("lint-ort-python-unsupported", "service")]


def test_a_pin_on_the_run_line_and_what_is_not_a_python(tmp_path: Path) -> None:
    ci = CI.replace("python-version: [\"3.8\", \"3.9\", \"3.10\"]", "python-version: [\"3.12\"]").replace(
        "pip install -r requirements.txt \\", "pip install onnxruntime-gpu==1.16.3 \\")
    _write(tmp_path / "a", {".github/workflows/ci.yml": ci})
    report = lint_paths([str(tmp_path / "a")])
    assert [(f.finding.id, f.where.line, f.replacement) for f in report.findings] == [
        ("lint-ort-python-unsupported", 15, "          pip install onnxruntime-gpu==1.18.1 \\")]  # its CUDA 11
    # `3.x` names no minor: the job's onnxruntime-gpu is judged without a Python
    ci = CI.replace("python-version: [\"3.8\", \"3.9\", \"3.10\"]", "python-version: [\"3.x\"]")
    _write(tmp_path / "b", {".github/workflows/ci.yml": ci, "requirements.txt": "onnxruntime-gpu==1.20.2\n"})
    assert lint_paths([str(tmp_path / "b")]).findings == ()


_PARTS = ["jobs:", "  a:", "    steps:", "      - run: |", "      - run: pip install x", "          pip install \\",
          "            onnxruntime-gpu==1.20.2", "      - uses: actions/setup-python@v5", "        with:",
          "          python-version: ${{ matrix.p }}", "    strategy:", "      matrix:", "        p: [3.8, '3.12']",
          "\\", "|", "- ", "#", "'", '"', "\t"]


@FUZZ
@given(st.lists(st.sampled_from(_PARTS) | st.text(max_size=12), max_size=40))
def test_the_workflow_reader_never_raises_on_run_scripts(parts: list[str]) -> None:
    with within():
        for job in read_workflow("\n".join(parts)):
            assert all(isinstance(c.line, int) for _, c in job.pip)

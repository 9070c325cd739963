"""The reports print fixes to paste: the first block is the merged plan `ortdoctor fix` runs (so one paste
fixes every package finding in one round), each finding's commands stand on lines of their own, and the
prose is apart from them."""

from __future__ import annotations

import json
import subprocess

from ortdoctor.core.facts import OrtDistribution
from ortdoctor.core.record import replace
from ortdoctor.core.shell import render_all
from ortdoctor.decide.fixes import Installer
from ortdoctor.report.fix_block import first_fix
from ortdoctor.report.json_report import dumps
from ortdoctor.report.markdown import render as render_markdown
from ortdoctor.report.model import Report
from ortdoctor.report.text import render
from tests.support.report_schema import validate
from tests.test_diagnose import SITE, full_plan, healthy_env, lib, ort_gpu, python_info
from tests.test_report import make_report

USER_SITE = "/home/u/.local/lib/python3.11/site-packages"
BASE = "/usr/bin/python3.11"


def _two_package_findings() -> Report:
    """A --user CPU copy shadowed by the venv's GPU build, which lacks curand: an error and a warning, each
    fixed by package steps, for two interpreters."""
    gpu = ort_gpu().distributions[0]
    cpu = OrtDistribution("onnxruntime", "1.31.1", USER_SITE, f"{USER_SITE}/onnxruntime-1.31.1.dist-info")
    py = python_info(site_dirs=(SITE, USER_SITE), user_site=USER_SITE, base_executable=BASE)
    env = healthy_env(python=py, ort=ort_gpu(distributions=(gpu, cpu)))
    return make_report(env, full_plan(curand=lib("curand", "libcurand.so.10", None)))


def test_the_first_block_is_the_merged_plan_and_covers_every_package_finding() -> None:
    report = _two_package_findings()
    first = first_fix(report)
    assert first.shown
    assert {f.id for f in first.plan.fixed} == {"cuda-lib-missing", "ort-multiple-packages"}
    lines = first.text().splitlines()
    assert lines[0] == f"{BASE} -m pip uninstall -y onnxruntime"
    assert lines[1].startswith("/venv/bin/python -m pip install ")
    # what `ortdoctor fix --yes` runs is the same
    assert [list(c.argv) for c in first.commands] == first.plan.argvs(Installer.of(report.env.python))
    text = render(report)
    block = text.index("Fix: paste these lines")
    assert block < text.index("[cuda-lib-missing]")
    for line in lines:
        assert f"    {line}\n" in text
    # each finding it covers points at it instead of repeating the commands
    after = text[text.index("[ort-multiple-packages]"):]
    assert "fix: in the Fix block above" in after.split("\n\n")[0]
    # the block pasted whole is valid shell
    assert subprocess.run(["bash", "-n"], input=first.text(), text=True, check=False).returncode == 0


def test_the_json_has_the_merged_block_and_each_findings_commands() -> None:
    data = json.loads(dumps(_two_package_findings()))
    validate(data)
    assert data["fix"]["findings"] == ["cuda-lib-missing", "ort-multiple-packages"]
    assert data["fix"]["text"].splitlines()[0] == f"{BASE} -m pip uninstall -y onnxruntime"
    multi = next(f for f in data["findings"] if f["id"] == "ort-multiple-packages")
    assert multi["steps"] == [{"verb": "uninstall", "args": ["-y", "onnxruntime"], "python": BASE}]
    assert multi["commands"] == [{"kind": "run", "argv": [BASE, "-m", "pip", "uninstall", "-y", "onnxruntime"],
                                  "text": f"{BASE} -m pip uninstall -y onnxruntime"}]
    # the fix text: the command lines, then the prose as comments
    assert [line for line in multi["fix"].splitlines() if not line.startswith("# ")] == [
        c["text"] for c in multi["commands"]]


def test_markdown_prints_the_merged_block_as_shell() -> None:
    md = render_markdown(_two_package_findings())
    assert "```sh\n" in md
    assert f"{BASE} -m pip uninstall -y onnxruntime" in md


def test_a_single_finding_prints_its_own_commands_then_its_prose() -> None:
    report = make_report(healthy_env(), full_plan(curand=lib("curand", "libcurand.so.10", None)))
    assert not first_fix(report).shown  # one finding: its own fix is the block
    f = next(f for f in report.findings if f.id == "cuda-lib-missing")
    text = render(report)
    part = text[text.index("[cuda-lib-missing]"):]
    command = render_all(f.commands)[0]
    assert f"    fix:\n        {command}\n" in part
    assert "\n    afterwards: `import ortdoctor.hook`" in part  # prose, not a comment, not in the block
    assert "then `import" not in text


def _poetry_report() -> Report:
    """The two package findings above, in a venv a poetry project owns."""
    report = _two_package_findings()
    return make_report(replace(report.env, python=replace(report.env.python, env_manager="poetry")),
                       full_plan(curand=lib("curand", "libcurand.so.10", None)))


def test_the_first_block_of_a_poetry_environment_ends_with_the_project_note_once() -> None:
    """A paste of the first block alone must say that the next `poetry sync` puts the packages back: the
    note is its last line, a comment (no prose on a command line), once for the merged commands."""
    report = _poetry_report()
    first = first_fix(report)
    assert first.shown
    lines = first.text().splitlines()
    note = lines[-1]
    assert note.startswith("# this environment belongs to a poetry project: to keep the change there, run in the "
                           "project poetry remove onnxruntime && poetry add ")
    assert note.endswith("instead (the next `poetry sync` puts back what the lock file says)")
    assert lines[:-1] == render_all(first.commands)  # the commands as before, then the note
    assert sum("poetry" in line for line in lines) == 1
    assert subprocess.run(["bash", "-n"], input=first.text(), text=True, check=False).returncode == 0
    # text: the block as printed; markdown: in the shell block; JSON: in text, and as the note itself
    text, md = render(report), render_markdown(report)
    assert f"    {note}\n" in text
    assert f"{note}\n```" in md
    # said once: the findings the block covers do not repeat their own part of it
    assert text.count("belongs to a poetry project") == 1
    assert md.count("belongs to a poetry project") == 1
    data = json.loads(dumps(report))
    validate(data)
    assert data["fix"]["text"] == first.text()
    assert data["fix"]["note"] == note.removeprefix("# ")


def test_without_a_project_the_first_block_has_no_note() -> None:
    first = first_fix(_two_package_findings())
    assert first.note == ""
    assert not any(line.startswith("#") for line in first.text().splitlines())
    assert "note" not in json.loads(dumps(_two_package_findings()))["fix"]

"""`ortdoctor check --format markdown`: one collapsible block for a GitHub issue, with no user path in it.

The end-to-end test runs the real command against the real wheels placed under a home directory whose
name looks like a user name, with that user in the environment, and checks that neither the home nor
the name survives, while every version and finding does.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ortdoctor.core.facts import Finding
from ortdoctor.prove.smoke.runner import SmokeResult
from ortdoctor.report.markdown import REDACTION_NOTE, Redactor, redactor_for, render
from tests.support import testenvs
from tests.test_diagnose import driver_none, full_plan, healthy_env
from tests.test_report import make_report

ROOT = Path(__file__).resolve().parents[1]
USER = "zqxodd-user7"  # distinctive, so any leak is found by a plain search


def assert_one_details_block(md: str) -> None:
    """Exactly one <details> element wrapping everything, and no other HTML outside code."""
    assert md.startswith("<details><summary>"), md[:80]
    assert md.endswith("\n</details>\n")
    lines = md.splitlines()
    assert lines[1] == "", "GitHub renders Markdown inside <details> only after a blank line"
    # fenced blocks are balanced; outside them and outside code spans only our own tags remain
    outside: list[str] = []
    fence: str | None = None
    for line in lines:
        m = re.match(r"^(`{3,})", line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and line == fence:
            fence = None
        elif fence is None:
            outside.append(re.sub(r"(`+)(?:(?!\1).)*?\1", "", line))
    assert fence is None, "unclosed code block"
    # (text inside code blocks and spans is literal for GitHub, whatever it contains)
    html = "\n".join(outside)
    tags = re.findall(r"</?([A-Za-z][\w-]*)", html)
    assert set(tags) <= {"details", "summary", "br"}, tags
    for tag in ("<details>", "</details>", "<summary>", "</summary>"):
        assert html.count(tag) == 1, tag


def _env(home: Path, *sites: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    for key in ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH"):
        env.pop(key, None)
    env.update({"HOME": str(home), "USER": USER, "LOGNAME": USER,
                "PYTHONPATH": os.pathsep.join([str(ROOT), *map(str, sites)])})
    env.update(extra or {})
    return env


@pytest.mark.realwheels
def test_real_report_has_no_user_path_and_every_version_and_finding(tmp_path: Path) -> None:
    home = tmp_path / "home" / USER
    sites = home / "sites"
    sites.mkdir(parents=True)
    for name in ("ort-gpu", "nvidia-cu13"):  # the real wheels, seen through paths under $HOME
        (sites / name).symlink_to(testenvs.ensure(name), target_is_directory=True)
    site_dirs = (sites / "ort-gpu", sites / "nvidia-cu13")
    # the user name outside the home directory too
    env = _env(home, *site_dirs, extra={"LD_LIBRARY_PATH": f"/srv/{USER}/lib"})

    md_proc = subprocess.run([sys.executable, "-m", "ortdoctor", "check", "--format", "markdown"], env=env,
                             cwd=home, capture_output=True, text=True, timeout=300)
    json_proc = subprocess.run([sys.executable, "-m", "ortdoctor", "check", "--json"], env=env, cwd=home,
                               capture_output=True, text=True, timeout=300)
    md = md_proc.stdout
    report: dict[str, Any] = json.loads(json_proc.stdout)
    assert "Traceback" not in md_proc.stderr, md_proc.stderr
    assert md_proc.returncode == json_proc.returncode == 1

    assert str(home) in json_proc.stdout  # the raw report does carry the paths ...
    assert USER.lower() not in md.lower()  # ... the Markdown one does not
    assert str(tmp_path) not in md
    assert "~/sites/ort-gpu/onnxruntime" in md
    assert "/srv/<user>/lib" in md
    assert REDACTION_NOTE in md
    assert_one_details_block(md)

    summary = md.splitlines()[0]
    assert "FAIL" in summary
    assert "onnxruntime-gpu 1.31.1" in summary
    versions = {report["python"]["version"], report["ort"]["version"], report["ort"]["cuda_version"]}
    versions |= {w["version"] for w in report["nvidia_wheels"]}
    versions |= {lib["version"] for lib in report["libraries"] if lib["version"]}
    for version in versions:
        assert version in md, version
    for f in report["findings"]:
        assert f"`{f['id']}`" in md, f["id"]
        assert f["title"] in md
    assert "driver-missing" in summary
    assert "**Smoke session**: ✘" in md  # the smoke session ran (and failed: no driver)


def test_ok_report_summary_says_proved() -> None:
    smoke = SmokeResult(ran=True, ok=True, providers=("CUDAExecutionProvider", "CPUExecutionProvider"),
                        device_id=0, timings_ms={"session": 812.5, "run": 0.4})
    rep = dataclasses.replace(make_report(healthy_env(), full_plan()), smoke=smoke, smoke_skipped=None)
    md = render(rep, redact=Redactor())
    assert_one_details_block(md)
    assert "✔ OK: onnxruntime-gpu 1.31.1 works as is, proved by the smoke session" in md.splitlines()[0]
    assert "| ✔ | cudart | `libcudart.so.13` | 13.0.96 |" in md
    assert "ran on CUDAExecutionProvider, CPUExecutionProvider (device 0), results correct" in md


def test_hostile_text_cannot_break_the_block() -> None:
    nasty = Finding("smoke-failed", "error", "a | pipe and <b>tag</b> and </details>",
                    "```\n</details>\n<script>x</script>\n````", "echo '|' ``` </summary>")
    rep = dataclasses.replace(make_report(healthy_env(driver=driver_none()), full_plan()),
                              findings=(nasty,), verdict="fail")
    md = render(rep, redact=Redactor())
    assert_one_details_block(md)
    assert "a \\| pipe and &lt;b&gt;tag&lt;/b&gt; and &lt;/details&gt;" in md


def test_redactor_rules() -> None:
    r = Redactor(homes=("/home/bob-smith",), users=("bob-smith",))
    assert r("/home/bob-smith/.venv/lib") == "~/.venv/lib"
    assert r("/home/bob-smith") == "~"
    assert r("/home/bob-smith2/x") == "/home/bob-smith2/x"  # another user's home, another name
    assert r("/opt/conda/envs/Bob-Smith-env") == "/opt/conda/envs/<user>-env"
    assert r(None) == ""


def test_redactor_from_the_environment_leaves_generic_names_alone(tmp_path: Path) -> None:
    home = tmp_path / USER
    r = redactor_for({"HOME": str(home), "USER": "root", "LOGNAME": USER})
    assert str(home) in r.homes
    assert USER in r.users
    assert "root" not in r.users
    assert r(f"{home}/x and /root/y by {USER}") == "~/x and /root/y by <user>"
    assert redactor_for({"HOME": "/", "USER": "ci"}) == Redactor()


def test_format_option_and_json_alias(tmp_path: Path) -> None:
    env = _env(tmp_path)
    base = [sys.executable, "-m", "ortdoctor", "check", "--no-smoke"]
    a = subprocess.run([*base, "--json"], env=env, capture_output=True, text=True, timeout=120)
    b = subprocess.run([*base, "--format", "json"], env=env, capture_output=True, text=True, timeout=120)
    ja, jb = json.loads(a.stdout), json.loads(b.stdout)
    assert [f["id"] for f in ja["findings"]] == [f["id"] for f in jb["findings"]]
    assert ja["findings"][0]["id"] == "ort-not-installed"
    assert a.returncode == b.returncode == 1
    bad = subprocess.run([*base, "--json", "--format", "markdown"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2
    assert "contradict" in bad.stderr
    assert bad.stdout == ""
    md = subprocess.run([*base, "--format", "markdown"], env=env, capture_output=True, text=True, timeout=120)
    assert md.returncode == 1
    assert_one_details_block(md.stdout)
    assert "not installed" in md.stdout

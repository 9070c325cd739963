"""The lint recipes of docs/recipes.md: the pre-commit hook manifest and the composite Action.

The hook: `.pre-commit-hooks.yaml` defines `ortdoctor-lint`, its `files` pattern selects exactly the
names lint recognises, and the documented configuration names that hook. The Action: the `run:` scripts
of `action.yml`'s lint and check steps are run with bash as the runner would run them (its inputs as
the environment, `RUNNER_TEMP` holding a virtual environment whose `ortdoctor` is this checkout's),
on a real requirements file that installs both packages.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ortdoctor.doctor.lint import kind_of

ROOT = Path(__file__).resolve().parents[1]
CASE = ROOT / "tests" / "data" / "lint" / "s0md3v__roop@216539489d65"


def _recipe(name: str) -> str:
    text = (ROOT / "docs" / "recipes.md").read_text(encoding="utf-8")
    for body in re.findall(r"```yaml\n(.*?)```", text, re.DOTALL):
        if re.search(rf"^# ortdoctor-lint-recipe: {name}$", body, re.MULTILINE):
            return str(body)
    raise AssertionError(f"no recipe {name}")


def test_hook_manifest_and_configuration() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    hook = next(h for h in hooks if h["id"] == "ortdoctor-lint")
    assert hook["entry"] == "ortdoctor lint"
    assert hook["language"] == "python"
    config = yaml.safe_load(_recipe("pre-commit"))
    assert config["repos"][0]["hooks"][0]["id"] == "ortdoctor-lint"
    pattern = re.compile(hook["files"])
    names = ["requirements.txt", "req/requirements-gpu.txt", "requirements/base.in", "constraints.txt",
             "pyproject.toml", "uv.lock", "poetry.lock", "pylock.toml", "pylock.dev.toml", "environment.yml",
             "env-cuda.yaml", "docker-compose.yml", "compose.gpu.yaml", "Dockerfile", "docker/Dockerfile.cuda12", "gpu.Dockerfile", "README.md",
             "setup.py", "setup.cfg", "src/app.py", "requirements.md", ".github/workflows/ci.yml", ".github/workflows/gpu.yaml",
             "ci/workflows/ci.yml", ".github/dependabot.yml"]
    for name in names:
        assert bool(pattern.search(name)) == (kind_of(Path(name)) is not None), name


def _step(name: str) -> dict[str, object]:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    return next(s for s in action["runs"]["steps"] if s["name"] == name)


def _venv(tmp_path: Path) -> Path:
    """RUNNER_TEMP with ortdoctor-venv/bin/ortdoctor: this checkout's, as the install step leaves it."""
    bin_dir = tmp_path / "ortdoctor-venv" / "bin"
    bin_dir.mkdir(parents=True)
    script = bin_dir / "ortdoctor"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} -m ortdoctor \"$@\"\n", encoding="utf-8")
    script.chmod(0o755)
    return tmp_path


def _run(step: dict[str, object], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
    return subprocess.run(["bash", "-e", "-c", str(step["run"])], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=120, check=False)


def test_action_lint_step_annotates_and_fails(tmp_path: Path) -> None:
    workflow = yaml.safe_load(_recipe("github-action"))
    uses = [s for job in workflow["jobs"].values() for s in job["steps"] if "ortdoctor/ortdoctor" in s.get("uses", "")]
    assert uses
    inputs = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["inputs"]
    assert {k for s in uses for k in s.get("with", {})} <= set(inputs)
    runner = _venv(tmp_path / "runner")
    sarif = tmp_path / "ortdoctor.sarif"
    proc = _run(_step("ortdoctor lint"), {"RUNNER_TEMP": str(runner), "PATHS": ".", "FORMAT": "github",
                                          "SARIF": str(sarif), "GPUS": "8.6 9.0", "MIN_DRIVER": "550.54.15"}, CASE)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("::error file=requirements.txt,line=9,title=lint-ort-cpu-and-gpu")
    assert '"ruleId": "lint-ort-cpu-and-gpu"' in sarif.read_text(encoding="utf-8")


@pytest.mark.skipif(Path("/dev/nvidiactl").exists(), reason="a GPU machine runs the check for real")
def test_action_check_step_skips_without_a_gpu(tmp_path: Path) -> None:
    runner = _venv(tmp_path / "runner")
    proc = _run(_step("ortdoctor check"), {"RUNNER_TEMP": str(runner), "CHECK": "auto", "PYTHON": "",
                                           "PATH": "/usr/bin:/bin"}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "no GPU on this runner" in proc.stdout

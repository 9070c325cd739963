"""docs/recipes.md, run: each block marked ``# ortdoctor-recipe: NAME`` is extracted and its commands are
run as the tool they are written for would run them (the HEALTHCHECK command through ``/bin/sh -c``,
the probes' exec argv directly, the GitHub steps with ``bash -e``, the entrypoint with ``sh``), against
the real onnxruntime-gpu and NVIDIA wheels on PYTHONPATH. This machine has no NVIDIA driver, so the
GPU environment fails with ``driver-missing``; the CPU build fails with ``ort-cpu-only``.

Also here: ``check --quiet`` and ``preload --quiet``, which the recipes rely on.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ortdoctor.prove.smoke.runner import SmokeResult
from ortdoctor.report.short import render as render_short
from tests.support import testenvs
from tests.test_diagnose import driver_none, full_plan, healthy_env
from tests.test_markdown import assert_one_details_block
from tests.test_report import make_report

ROOT = Path(__file__).resolve().parents[1]
RECIPES = ROOT / "docs" / "recipes.md"
GPU = ("ort-gpu", "nvidia-cu13")


def recipes() -> dict[str, str]:
    """name -> the code block (without its fence) for every block marked ``# ortdoctor-recipe: NAME``."""
    out: dict[str, str] = {}
    for body in re.findall(r"^```[\w-]*\n(.*?)^```$", RECIPES.read_text(), re.MULTILINE | re.DOTALL):
        m = re.search(r"^# ortdoctor-recipe: ([\w-]+)$", body, re.MULTILINE)
        if m:
            assert m.group(1) not in out, f"two recipes named {m.group(1)}"
            out[m.group(1)] = body
    return out


def test_every_recipe_is_found() -> None:
    assert set(recipes()) == {"dockerfile-healthcheck", "entrypoint", "kubernetes-probes", "github-actions"}


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with an ``ortdoctor`` command for PATH: the installed console script when this Python
    has one, else a two-line script running ``python -m ortdoctor``."""
    d = tmp_path_factory.mktemp("bin")
    script = Path(sys.executable).parent / "ortdoctor"
    if script.exists():
        (d / "ortdoctor").symlink_to(script)
    else:
        (d / "ortdoctor").write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m ortdoctor \"$@\"\n")
        (d / "ortdoctor").chmod(0o755)
    return d


def env_for(bin_dir: Path, *envs: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    for key in ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "ORTDOCTOR_MATRIX", "ORTDOCTOR_DIRECTORY"):
        env.pop(key, None)
    env["PATH"] = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *(str(testenvs.ensure(e)) for e in envs)])
    env.update(extra or {})
    return env


def run(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def assert_quiet_fail(out: str, finding_id: str) -> None:
    lines = out.splitlines()
    assert "✘ FAIL" in lines[0]
    assert f"first: {finding_id}" in lines[0]
    i = next(n for n, line in enumerate(lines) if line.endswith(f"[{finding_id}]"))
    assert lines[i + 1].startswith("    fix: ")


# --------------------------------------------------------------------------------------------- Docker
def healthcheck_command() -> str:
    text = recipes()["dockerfile-healthcheck"].replace("\\\n", " ")
    m = re.search(r"^HEALTHCHECK\s.*?\bCMD\s+(.+)$", text, re.MULTILINE)
    assert m, text
    return m.group(1).strip()


@pytest.mark.realwheels
def test_dockerfile_healthcheck_is_unhealthy_without_a_driver(bin_dir: Path) -> None:
    cmd = healthcheck_command()
    assert cmd == "ortdoctor check --no-smoke --quiet || exit 1"
    proc = run(["/bin/sh", "-c", cmd], env_for(bin_dir, *GPU))  # Docker runs CMD's shell form this way
    assert proc.returncode == 1
    assert_quiet_fail(proc.stdout, "driver-missing")


@pytest.mark.realwheels
def test_dockerfile_healthcheck_with_the_cpu_build(bin_dir: Path) -> None:
    proc = run(["/bin/sh", "-c", healthcheck_command()], env_for(bin_dir, "ort-cpu"))
    assert proc.returncode == 1
    assert_quiet_fail(proc.stdout, "ort-cpu-only")


def test_dockerfile_healthcheck_never_returns_dockers_reserved_2(bin_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "matrix.yaml"
    bad.write_text("not: [a matrix\n")
    env = env_for(bin_dir, extra={"ORTDOCTOR_MATRIX": str(bad)})
    plain = run(["ortdoctor", "check", "--no-smoke", "--quiet"], env)
    assert plain.returncode == 2  # a usage error ...
    proc = run(["/bin/sh", "-c", healthcheck_command()], env)
    assert proc.returncode == 1  # ... reported to Docker as unhealthy, not as its reserved 2


# ----------------------------------------------------------------------------------------- Kubernetes
def k8s_container() -> dict[str, Any]:
    pod = yaml.safe_load(recipes()["kubernetes-probes"])
    container: dict[str, Any] = pod["spec"]["containers"][0]
    return container


@pytest.mark.realwheels
def test_kubernetes_probes_fail_without_a_driver(bin_dir: Path) -> None:
    container = k8s_container()
    env = env_for(bin_dir, *GPU)
    for probe in ("startupProbe", "readinessProbe"):
        argv = container[probe]["exec"]["command"]
        assert argv[:2] == ["ortdoctor", "check"]
        proc = run(argv, env)  # the kubelet execs the argv as is, no shell
        assert proc.returncode == 1, probe
        assert_quiet_fail(proc.stdout, "driver-missing")
    # the startup probe runs the smoke session; the readiness probe does not
    assert "--no-smoke" not in container["startupProbe"]["exec"]["command"]
    assert "--no-smoke" in container["readinessProbe"]["exec"]["command"]


def test_kubernetes_startup_probe_outlasts_the_smoke_timeout() -> None:
    probe = k8s_container()["startupProbe"]
    argv = probe["exec"]["command"]
    smoke_timeout = float(argv[argv.index("--timeout") + 1])
    assert smoke_timeout < probe["timeoutSeconds"]


@pytest.mark.realwheels
def test_kubernetes_readiness_with_the_cpu_build(bin_dir: Path) -> None:
    proc = run(k8s_container()["readinessProbe"]["exec"]["command"], env_for(bin_dir, "ort-cpu"))
    assert proc.returncode == 1
    assert_quiet_fail(proc.stdout, "ort-cpu-only")


# ------------------------------------------------------------------------------------- GitHub Actions
@pytest.mark.realwheels
def test_github_actions_steps(bin_dir: Path, tmp_path: Path) -> None:
    """Run the job's ortdoctor steps in order with GitHub's rules for ``if:`` (the checkout and the pip
    install are the runner's business: the wheels come from the test environments here)."""
    workflow = yaml.safe_load(recipes()["github-actions"])
    (job,) = workflow["jobs"].values()
    summary = tmp_path / "summary.md"
    env = env_for(bin_dir, *GPU, extra={"GITHUB_STEP_SUMMARY": str(summary)})
    failed = False
    codes: dict[str, int] = {}
    uploaded: list[Path] = []
    for step in job["steps"]:
        condition = step.get("if", "success()")
        if not {"success()": not failed, "failure()": failed, "always()": True}[condition]:
            continue
        if "uses" in step:
            if step["uses"].startswith("actions/upload-artifact@"):
                uploaded.append(tmp_path / step["with"]["path"])
            continue
        if "ortdoctor" not in step["run"] or step["run"].startswith("pip install"):
            continue
        proc = run(["bash", "-e", "-c", step["run"]], env, cwd=tmp_path)  # GitHub: bash -e {0}
        codes[step.get("name", step["run"])] = proc.returncode
        failed = failed or proc.returncode != 0

    assert codes == {"ortdoctor check": 1, "ortdoctor report in the job summary": 0}
    report = json.loads((tmp_path / "ortdoctor.json").read_text())  # written although the gate failed
    assert report["schema_version"] == 2
    assert report["verdict"] == "fail"
    assert report["findings"][0]["id"] == "driver-missing"
    assert uploaded == [tmp_path / "ortdoctor.json"]
    md = summary.read_text()
    assert_one_details_block(md)
    assert "driver-missing" in md.splitlines()[0]


# ----------------------------------------------------------------------------------------- entrypoint
@pytest.fixture
def entrypoint(tmp_path: Path) -> Path:
    path = tmp_path / "docker-entrypoint.sh"
    path.write_text(recipes()["entrypoint"])
    path.chmod(0o755)
    return path


@pytest.mark.realwheels
def test_entrypoint_puts_the_wheel_dirs_on_ld_library_path(bin_dir: Path, entrypoint: Path) -> None:
    proc = run(["sh", str(entrypoint), "env"], env_for(bin_dir, *GPU, extra={"LD_LIBRARY_PATH": "/opt/mine"}))
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("LD_LIBRARY_PATH="))
    dirs = line.split("=", 1)[1].split(":")
    cu13 = str(testenvs.ensure("nvidia-cu13"))
    assert dirs == [f"{cu13}/nvidia/cu13/lib", f"{cu13}/nvidia/cudnn/lib", "/opt/mine"]


@pytest.mark.realwheels
def test_entrypoint_lets_the_program_load_the_wheels_libraries(bin_dir: Path, entrypoint: Path) -> None:
    """The exec'd program finds cuBLAS and cuDNN by soname (they are only in the wheels) and cudart from
    the wheel rather than from the system's ld.so.cache."""
    program = ("import ctypes\n"
               "for name in ('libcudart.so.13', 'libcublas.so.13', 'libcudnn.so.9'):\n"
               "    ctypes.CDLL(name)\n"
               "print(''.join(line for line in open('/proc/self/maps') if 'libcudart.so' in line))\n")
    proc = run(["sh", str(entrypoint), sys.executable, "-c", program], env_for(bin_dir, *GPU))
    assert proc.returncode == 0, proc.stderr
    mapped = {line.split()[-1] for line in proc.stdout.splitlines() if line.strip()}
    assert mapped == {f"{testenvs.ensure('nvidia-cu13')}/nvidia/cu13/lib/libcudart.so.13"}


@pytest.mark.realwheels
def test_entrypoint_refuses_to_start_when_the_libraries_do_not_load(bin_dir: Path, entrypoint: Path) -> None:
    proc = run(["sh", str(entrypoint), "echo", "STARTED"], env_for(bin_dir, "ort-cpu"))
    assert proc.returncode == 1
    assert "STARTED" not in proc.stdout
    assert "[ort-cpu-only]" in proc.stderr
    assert "docker-entrypoint: the CUDA libraries onnxruntime-gpu needs did not load" in proc.stderr


# ------------------------------------------------------------------------------------------- --quiet
def test_quiet_ok_is_one_line() -> None:
    smoke = SmokeResult(ran=True, ok=True, providers=("CUDAExecutionProvider",), device_id=0)
    rep = dataclasses.replace(make_report(healthy_env(), full_plan()), smoke=smoke)
    assert rep.verdict == "ok"
    out = render_short(rep)
    assert out.count("\n") == 1
    assert "✔ OK" in out


def test_quiet_fail_lists_problems_with_fixes_and_no_notes() -> None:
    rep = make_report(healthy_env(driver=driver_none()), full_plan())
    out = render_short(rep)
    assert_quiet_fail(out, "driver-missing")
    ids = re.findall(r"\[([a-z0-9-]+)\]$", out, re.MULTILINE)
    assert ids == [f.id for f in rep.findings if f.severity == "error"] + [
        f.id for f in rep.findings if f.severity == "warning"]


@pytest.mark.realwheels
def test_preload_quiet_prints_only_the_env_line(bin_dir: Path) -> None:
    proc = run(["ortdoctor", "preload", "--print-env", "--quiet"], env_for(bin_dir, *GPU))
    assert proc.returncode == 0
    assert proc.stdout.count("\n") == 1
    assert proc.stdout.startswith("export LD_LIBRARY_PATH=")
    assert proc.stderr == ""

"""Every package spec a `check`/`preload` fix can print exists on PyPI, and the fix names the interpreter.

The environments are every onnxruntime-gpu release of the matrix with nothing of its CUDA set installed,
with another CUDA major's files only, as a CPU build, as both packages, with a driver too old for it; the
findings come from the real diagnosis with the shipped matrix, and every install step is checked
against the matrix's package table (tests/support/pypi.py).
"""

from __future__ import annotations

import dataclasses
import subprocess

import pytest

from ortdoctor.core.facts import Candidate, DriverInfo, Finding, OrtDistribution
from ortdoctor.core.shell import render_all
from ortdoctor.decide.fixes import Installer, quote
from ortdoctor.decide.matrix.load import load_matrix
from ortdoctor.decide.resolve import resolve
from ortdoctor.diagnose.checklist import diagnose
from tests.support.pypi import spec_problem, specs_of
from tests.test_diagnose import SITE, healthy_env, ort_cpu, ort_gpu
from tests.test_tensorrt_diagnose import tensorrt_findings

MATRIX = load_matrix()
VERSIONS = [v for r in MATRIX.releases if r.pypi for v in r.versions]


def _findings(version: str, *, other_major: bool = False, driver: DriverInfo | None = None) -> list[Finding]:
    match = MATRIX.release_for(version)
    assert match is not None
    release = match.release
    ort = ort_gpu(version=version, cuda_version=release.cuda if release.source == "wheel" else None,
                  cudnn_major=release.cudnn_major)
    env = healthy_env(ort=ort, nvidia_wheels=(), **({"driver": driver} if driver else {}))
    plan = resolve(env, MATRIX, index={})
    if other_major:  # every library present for another CUDA major only
        libs = tuple(dataclasses.replace(lp, other_major=(Candidate(f"/x/{lp.soname}.99", "system", None,
                                                                    "CUDA 99 file, build needs CUDA 13"),))
                     for lp in plan.libraries)
        plan = dataclasses.replace(plan, libraries=libs)
    return diagnose(env, plan, MATRIX)


def _all_findings() -> list[Finding]:
    out: list[Finding] = []
    old_driver = DriverInfo(available=True, version="450.80.02", cuda_version="11.0")
    for version in VERSIONS:
        out += _findings(version)
        out += _findings(version, other_major=True)
        out += _findings(version, driver=old_driver)
    both = (OrtDistribution("onnxruntime-gpu", "1.31.1", SITE, f"{SITE}/onnxruntime_gpu-1.31.1.dist-info"),
            OrtDistribution("onnxruntime", "1.31.1", SITE, f"{SITE}/onnxruntime-1.31.1.dist-info"))
    out += diagnose(healthy_env(ort=ort_cpu(distributions=both)), None, MATRIX)
    for cuda in ("11.8", "12.4", "13.0"):
        driver = DriverInfo(available=True, version="580.65.06", cuda_version=cuda)
        out += diagnose(healthy_env(ort=ort_cpu(), driver=driver), None, MATRIX)
    out += tensorrt_findings()  # TensorRT (pinned majors, NVIDIA's index) and the plugin EP packages
    return out


FINDINGS = _all_findings()
SPECS = sorted({spec for f in FINDINGS for s in f.steps if s.verb == "install" for spec in specs_of(s.args)})


def test_the_grid_prints_package_fixes_at_all() -> None:
    assert len(SPECS) > 20
    assert any(s.startswith("onnxruntime-gpu[cuda,cudnn]==") for s in SPECS)
    assert "nvidia-cudnn-cu11==8.*" in SPECS  # the old CUDA 11.8 / cuDNN 8 builds (1.15-1.18)


@pytest.mark.parametrize("spec", SPECS)
def test_every_spec_a_fix_installs_exists(spec: str) -> None:
    assert spec_problem(spec) is None, spec_problem(spec)


def test_every_package_fix_names_the_interpreter() -> None:
    python = quote(healthy_env().python.executable)
    for f in FINDINGS:
        if f.steps:
            assert f.fix is not None
            assert f"{python} -m pip " in f.fix, (f.id, f.fix)
            assert "\npip " not in "\n" + f.fix, (f.id, f.fix)
            assert " && pip " not in f.fix, (f.id, f.fix)


def test_a_reinstall_keeps_the_installed_version() -> None:
    """An unpinned onnxruntime-gpu reinstall moves to the newest build, maybe for another CUDA major."""
    for f in FINDINGS:
        for s in f.steps:
            if s.verb == "install" and "--force-reinstall" in s.args:
                assert all("==" in spec for spec in specs_of(s.args)), (f.id, s.args)


def test_without_pip_the_fix_bootstraps_it_or_uses_uv() -> None:
    steps = next(f.steps for f in FINDINGS if f.steps)
    assert Installer("/v/bin/python", has_pip=False).commands(steps).startswith(  # one line, for a sentence
        "/v/bin/python -m ensurepip --upgrade && /v/bin/python -m pip install ")
    assert Installer("/v/bin/python", has_pip=False, uv="/usr/bin/uv").commands(steps).startswith(
        "/usr/bin/uv pip install --python /v/bin/python ")


def test_a_package_fix_pasted_whole_runs_its_commands_and_nothing_else() -> None:
    """Every line of a package fix is one of its commands or a shell comment: the whole fix pasted into a
    shell runs the commands (prose in brackets or an apostrophe outside a comment is a bash syntax error,
    and "then ..." stops the paste). For the errors and warnings, whose fix is the one to paste
    (tests/convergence/); a note may lead with advice."""
    python = healthy_env().python
    installer = Installer.of(python)
    seen = set()
    for f in FINDINGS:
        if not f.steps or f.fix is None or f.severity == "info":
            continue
        assert f.commands, f.id
        lines = [line for line in f.fix.splitlines() if not line.startswith("# ")]
        assert lines == render_all(f.commands), (f.id, f.fix)
        package = render_all(installer.lines(f.steps))
        assert any(lines[i:i + len(package)] == package for i in range(len(lines))), (f.id, f.fix)
        if f.fix not in seen:
            seen.add(f.fix)
            proc = subprocess.run(["bash", "-n", "-c", f.fix], capture_output=True, text=True, check=False)
            assert proc.returncode == 0, (f.id, f.fix, proc.stderr)

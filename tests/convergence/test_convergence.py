"""Every printed primary fix, pasted as it stands into a broken venv built from the real wheels, leaves
an environment the next check finds clean (the missing driver aside): one round.

The most telling scenarios of the grid run here (an old build read without its build info, checked
again with the smoke session on this driverless machine; a CUDA 13 build with CUDA 12 wheels; both
packages; a venv without pip; a --target directory whose path needs quoting; a site-packages the
checking user cannot read); ``python scripts/convergence.py`` runs them all. What "primary" and
"clean" mean: tests/convergence/harness.py. They need PyPI the first time (their wheels go to
``.testenvs/convergence-wheels/``, the cache the test environments share; the sizes are in the
README's Development section) and are skipped without it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.convergence import harness
from tests.convergence.harness import Scenario
from tests.convergence.scenarios import SCENARIOS

CI = [s for s in SCENARIOS if s.ci]


@pytest.fixture(scope="module")
def ortdoctor_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not harness.pypi_reachable():
        pytest.skip("PyPI is not reachable: the convergence scenarios install the real wheels")
    return harness.build_ortdoctor_wheel(tmp_path_factory.mktemp("ortdoctor-wheel"))


def _report(o: harness.Outcome) -> str:
    lines = [o.summary(), f"fix as printed:\n{o.fix}", f"pip said (tail):\n{o.fix_output[-2000:]}"]
    if o.after is not None:
        lines.append("check after: " + ", ".join(f"{f['id']} ({f['severity']})" for f in o.after.findings))
    return "\n".join(lines)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", CI, ids=[s.name for s in CI])
def test_the_primary_fix_converges_in_one_round(scenario: Scenario, ortdoctor_wheel: Path) -> None:
    if scenario.unreadable and harness._nobody() is None:
        pytest.skip("checking as another user needs root and a `nobody` user")
    try:
        harness.fetch_scenario(scenario)
    except harness.HarnessError as e:  # a download that failed is the network's, not ortdoctor's
        if not harness.pypi_reachable():
            pytest.skip(f"PyPI went away while fetching the wheels: {e}")
        raise
    o = harness.run_scenario(scenario, ortdoctor_wheel)
    assert o.error is None, o.error
    assert not o.missing_expected, _report(o)  # the diagnosis is right before the fix is tried
    assert o.pasted is not None, _report(o)
    assert not o.decoy_calls, _report(o)  # the fix never reached the `pip` first on PATH
    assert not o.damage, _report(o)  # nothing beside the fix's job was made or lost
    assert o.converged, _report(o)


@pytest.mark.slow
def test_ortdoctor_fix_yes_converges_in_one_round(ortdoctor_wheel: Path) -> None:
    """`ortdoctor fix --yes` in the venv (not activated, another Python's pip first on PATH) runs the
    commands through the venv's own interpreter and leaves it clean."""
    scenario = next(s for s in SCENARIOS if s.name == "both-packages")
    harness.fetch_scenario(scenario)
    o = harness.run_fix_command(scenario, ortdoctor_wheel)
    assert o.error is None, o.error
    assert o.primary_id == "ort-multiple-packages", _report(o)
    # exit 1 here all the same: the check after the fix still finds no driver on this machine
    assert o.fix_rc in (0, 1), _report(o)
    assert " failed (" not in o.fix_output, _report(o)
    assert not o.decoy_calls, _report(o)
    assert "Checked again:" in o.fix_stdout, _report(o)  # ortdoctor's own report, pip's log aside
    assert o.after is not None, _report(o)
    assert not o.after.problems, _report(o)
    assert not o.preload_failed, _report(o)

def test_the_ci_scenarios_are_the_telling_ones() -> None:
    """An old build, another CUDA major's wheels, both packages, no pip, a --target directory whose path
    needs quoting, no driver under the smoke session, an unreadable site-packages: each defect class once."""
    names = {s.name for s in CI}
    assert len(CI) <= 6
    assert any(s.target_installs for s in CI)
    assert any(s.smoke for s in CI)
    assert any(s.unreadable for s in CI)
    assert any(n.startswith("old-") for n in names)
    assert any(s.without_pip for s in CI)
    assert "both-packages" in names
    assert "cuda13-build-cu12-wheels" in names


def test_a_later_round_takes_the_next_fix_a_user_would() -> None:
    findings: list[dict[str, Any]] = [
        {"id": "driver-missing", "severity": "error", "fix": "install a driver"},
        {"id": "cuda-lib-not-loadable", "severity": "warning", "fix": "import ortdoctor.hook"},
        {"id": "cudnn-major-mismatch", "severity": "warning", "fix": "/v/bin/python -m pip uninstall -y x"},
        {"id": "multiprocessing-fork", "severity": "info", "fix": None},
    ]
    assert harness.primary(findings) is None  # the machine's own problem is never the primary fix
    nxt = harness.next_fix(findings)
    assert nxt is not None
    assert nxt["id"] == "cudnn-major-mismatch"


def test_the_decoy_catches_a_bare_pip() -> None:
    """The harness itself: a fix saying bare `pip` or `python -m pip` reaches the decoy, which logs it
    (and belongs to another interpreter, as ortdoctor's own pip-other-interpreter finding would say)."""
    ws = harness.Workspace()
    try:
        ws.make_decoy()
        env = ws.user_env()
        for line in ("pip --version", "python3 -m pip --version"):
            proc = harness._run(["bash", "-c", line], env=env, cwd=ws.cwd, timeout=120)
            assert proc.returncode == 0, proc.stderr
            assert str(ws.decoy) in proc.stdout  # pip reports the decoy's own site-packages
        assert len(ws.decoy_calls()) == 2
    finally:
        ws.close()


def test_the_fixs_output_is_kept_whole() -> None:
    """`ortdoctor fix --yes` prints "Checked again:" on stdout before pip's log on stderr; pip writes a
    line per wheel, so a tail of the two together lost the line (the README's test command failed)."""
    o = harness.Outcome("x")
    harness.record_fix(o, harness._run(["bash", "-c", "echo 'Checked again:'; printf '%*s' 20000 '' | tr ' ' x >&2"],
                                       timeout=60))
    assert o.fix_rc == 0
    assert "Checked again:" in o.fix_stdout
    assert len(o.fix_stderr) == 20000
    assert o.fix_output.startswith("Checked again:")


def test_a_change_to_the_activated_venv_is_damage() -> None:
    """With another venv activated, its `bin/` comes before the decoy, as `activate` leaves PATH: a fix
    saying bare `pip` changes that venv, not the decoy's Python, and the harness calls it damage."""
    ws = harness.Workspace()
    try:
        ws.make_decoy()
        ws.activated = ws.root / "activated-venv"
        harness._checked([sys.executable, "-m", "venv", str(ws.activated)])
        ws.kept, ws.kept_files = ws.activated, harness._files(ws.activated)
        assert ws.damage() == []
        proc = harness._run(["bash", "-c", "pip uninstall -y pip"], env=ws.user_env(), cwd=ws.cwd, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert not ws.decoy_calls()
        assert any("the activated venv's site-packages changed" in d for d in ws.damage())
    finally:
        ws.close()

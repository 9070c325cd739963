"""`ortdoctor fleet --ray` on raylets started by `ray start`, each from a different virtual environment.

As an operator's cluster is made: `ray start --head` on one node and `ray start --address=...` on the
others, every node's Ray run by the Python of that node's image (tests/support/ray_cluster.py: one venv
per node, each with its own onnxruntime wheels, all on loopback). Ray runs a node's workers with the
Python its raylet was started from, so the check of each node runs in that node's own venv, not in the
driver's. While two added nodes are checking, one raylet is killed (SIGKILL) and the other stopped
(SIGSTOP); `--json` stays one JSON document holding every node.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import fleet_reports, testenvs
from tests.support.fleet_reports import NODES
from tests.support.ray_cluster import RayCluster, make_venv

pytest.importorskip("ray", reason="ray is not installed (pip install 'ortdoctor[fleet]')")

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.realwheels]

# a check in a venv with this hook waits, its mark file written, where MIDRUN names that file: the run is
# then caught in the middle (a .pth line that starts with "import" runs at every start of that Python)
_MIDRUN_HOOK = ("import os, sys, time; os.environ.get('MIDRUN') and 'check' in sys.orig_argv and "
                "'--json' in sys.orig_argv and (open(os.environ['MIDRUN'], 'w').write(str(os.getpid())), "
                "time.sleep(20))\n")


def _env(name: str, like: str | None = None, **extra: str) -> dict[str, str]:
    """A node's environment for `ray start`: the fake driver of docs/fleet.md's node, no PYTHONPATH (the
    node's wheels are in its venv)."""
    node = next(n for n in NODES if n.name == (like or name))
    env = fleet_reports.node_environ(node, nvml_dir=fleet_reports.nvml_dir())
    env.pop("PYTHONPATH", None)
    # notice a killed or stopped raylet within about a second (default: 3 s x 5 missed health checks)
    return {**env, "NODE_NAME": name, "RAY_health_check_period_ms": "500", "RAY_health_check_timeout_ms": "500",
            "RAY_health_check_failure_threshold": "2", **extra}


def _venv(base: Path, name: str, like: str | None = None, hook: bool = False) -> Path:
    node = next(n for n in NODES if n.name == (like or name))
    python = make_venv(base / f"venv-{name}", [str(testenvs.ensure(e)) for e in node.envs])
    if hook:
        site = next((python.parent.parent / "lib").glob("python*/site-packages"))
        (site / "ortdoctor-midrun.pth").write_text(_MIDRUN_HOOK)
    return python


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    base = tmp_path_factory.mktemp("ray-venvs")
    # Ray's socket paths must fit a unix socket's 107 bytes: a short directory of its own
    temp = Path(tempfile.mkdtemp(prefix="od-ray-", dir="/tmp"))
    c = RayCluster(temp, base)
    try:
        # gpu-a as it should be (the head), gpu-c built with the CPU package, gpu-d with both packages;
        # one at a time: raylets starting together on two shared cores miss Ray's start-up deadline
        for n, name in enumerate(("gpu-a", "gpu-c", "gpu-d"), 1):
            c.add(name, _venv(base, name), _env(name), resources=f'{{"{name}": 1}}')
            c.wait(n)
        yield c
    finally:
        c.shutdown()
        subprocess.run(["rm", "-rf", "--", str(temp)], check=False)


def _fleet(cluster: RayCluster, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ortdoctor", "fleet", "--ray", cluster.address, "--json",
                           "--no-smoke", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def test_each_node_checks_its_own_venv(cluster: RayCluster) -> None:
    proc = _fleet(cluster)
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["counts"]["nodes"] == 3
    nodes = {n["host"]["name"]: n for n in data["nodes"]}
    assert {k: n["status"] for k, n in nodes.items()} == {"gpu-a": "warn", "gpu-c": "fail", "gpu-d": "fail"}
    assert "ort-cpu-only" in {f["id"] for f in nodes["gpu-c"]["findings"]}
    assert "ort-multiple-packages" in {f["id"] for f in nodes["gpu-d"]["findings"]}
    # each check ran with the Python its node's raylet was started from: three venvs, none the driver's
    pythons = {k: n["ray"]["python"] for k, n in nodes.items()}
    assert pythons == {node.name: str(node.python) for node in cluster.nodes}
    assert sys.executable not in pythons.values()


def test_a_node_killed_and_one_stopped_mid_run(cluster: RayCluster, tmp_path: Path) -> None:
    """Last in the file: it leaves the cluster with two dead nodes."""
    base = tmp_path / "venvs"
    marks = {name: tmp_path / f"started-{name}" for name in ("gpu-k", "gpu-s")}
    added = {}
    for n, name in enumerate(marks, 4):
        added[name] = cluster.add(name, _venv(base, name, like="gpu-a", hook=True),
                                  _env(name, like="gpu-a", MIDRUN=str(marks[name])), resources=f'{{"{name}": 1}}')
        cluster.wait(n)
    raylets = {name: node.raylet_pid() for name, node in added.items()}
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "ortdoctor", "fleet", "--ray", cluster.address, "--json",
                             "--no-smoke", "--timeout", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT)
    stopped = False
    try:
        deadline = time.monotonic() + 120
        while not all(mark.exists() and mark.read_text() for mark in marks.values()):
            assert time.monotonic() < deadline, "the checks never started on the added nodes"
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        os.kill(raylets["gpu-k"], signal.SIGKILL)
        os.kill(raylets["gpu-s"], signal.SIGSTOP)
        stopped = True
        out, err = proc.communicate(timeout=180)
    finally:
        if stopped:
            os.kill(raylets["gpu-s"], signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        for mark in marks.values():  # the waiting checks (sessions of their own): ended by their ids
            if mark.exists() and mark.read_text():
                try:
                    os.kill(int(mark.read_text()), signal.SIGKILL)
                except ProcessLookupError:
                    pass
    took = time.monotonic() - started  # for the record: bounded by --timeout and Ray's health checks
    assert proc.returncode == 1, err
    data = json.loads(out)  # Ray's lines about the dead raylets went to stderr, not into the report
    nodes = data["nodes"]
    print(f"run took {took:.1f} s", json.dumps([n for n in nodes if n["reason"]], indent=1))  # pytest -s
    assert data["counts"]["nodes"] == len(nodes) == 5
    by_id = {n["host"].get("ray_node_id"): n for n in nodes}
    assert len(by_id) == 5
    answered = {n["host"]["name"]: n for n in nodes if n["reason"] is None}
    assert {answered[k]["status"] for k in ("gpu-a", "gpu-c", "gpu-d")} <= {"warn", "fail"}
    for node in nodes:
        assert (node["reason"] is None) == (node["status"] in ("ok", "warn", "fail")), node
    ids = cluster.node_ids()
    killed, stopped_node = by_id[ids["gpu-k"]], by_id[ids["gpu-s"]]
    assert killed["status"] in ("unreachable", "error")
    assert killed["reason"]
    # the stopped raylet's node: marked dead by its missed health checks (its worker may still answer)
    assert stopped_node["status"] in ("unreachable", "error", "timeout", "warn")
    assert len([n for n in nodes if n["reason"] is not None]) >= 1
    for group in data["groups"]:  # a group never speaks for a node with another reason
        reasons = {n["reason"] for n in nodes if n["label"] in group["nodes"]}
        assert len(reasons) == 1, group

"""`ortdoctor fleet --ray` on a real local Ray cluster whose nodes have different environments.

Three raylets on this machine (``ray.cluster_utils.Cluster``), one CPU and a small object store each,
every node started with its own environment (Ray passes ``env_vars`` to the raylet, and its workers
inherit them): real onnxruntime wheels on PYTHONPATH (tests/support/testenvs.py) and a driver answered
by the fake NVML library (tests/support/fake_nvml.py). A fourth node is killed before the run; at the
end two more are added, and while their checks run one raylet is killed and the other stopped. The
checks run in the workers' children exactly as on a real cluster.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ortdoctor.fleet.drift import summarize
from ortdoctor.fleet.render import render_text
from tests.support import fleet_reports
from tests.support.fleet_reports import NODES

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'ortdoctor[fleet]')")

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.realwheels]
OBJECT_STORE = 80 * 1024 * 1024


def _node_env(name: str, **extra: str) -> dict[str, str]:
    node = next(n for n in NODES if n.name == name)
    env = fleet_reports.node_environ(node, nvml_dir=fleet_reports.nvml_dir(), with_root=False)
    keep = ("PYTHONPATH", "LD_LIBRARY_PATH", "FAKE_NVML")
    return {**{k: env[k] for k in keep if k in env}, "NODE_NAME": name, **extra}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    from ray.cluster_utils import Cluster

    # gpu-a: as it should be, on a Ray that empties CUDA_VISIBLE_DEVICES in tasks without GPUs (what Ray
    # did before ray-project/ray#54868; RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO=1 brings it back)
    head = {"num_cpus": 1, "resources": {"gpu_a": 1}, "object_store_memory": OBJECT_STORE,
            "env_vars": _node_env("gpu-a", RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO="1"),
            # notice the killed node within about a second (default: 3 s x 5 missed health checks)
            "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 2,
                               "health_check_timeout_ms": 500}}
    c = Cluster(initialize_head=True, head_node_args=head)
    try:
        # gpu-b: an older driver; HANG makes tests' wrapper Python hang there
        c.add_node(num_cpus=1, resources={"gpu_b": 1}, object_store_memory=OBJECT_STORE,
                   env_vars=_node_env("gpu-b", HANG="1"))
        # gpu-c: an image built with the CPU package
        c.add_node(num_cpus=1, resources={"gpu_c": 1}, object_store_memory=OBJECT_STORE, env_vars=_node_env("gpu-c"))
        lost = c.add_node(num_cpus=1, resources={"lost": 1}, object_store_memory=OBJECT_STORE)
        c.wait_for_nodes()
        c.remove_node(lost, allow_graceful=False)  # killed: Ray still lists it for a while
        yield c
    finally:
        c.shutdown()  # type: ignore[no-untyped-call]


def _statuses(nodes: Any) -> dict[str, str]:
    return {str(n.host.get("name") or n.label): n.status for n in nodes}


def test_every_node_is_checked_and_the_fleet_names_the_drift(cluster: Any) -> None:
    from ortdoctor.fleet.ray_runner import run_on_ray

    seen: list[tuple[int, int]] = []
    result = run_on_ray(cluster.address, timeout=60, no_smoke=True,
                        progress=lambda done, total, node: seen.append((done, total)))
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    statuses = _statuses(result.nodes)
    assert {k: v for k, v in statuses.items() if k.startswith("gpu-")} == {"gpu-a": "warn", "gpu-b": "fail",
                                                                           "gpu-c": "fail"}
    lost = [n for n in result.nodes if not str(n.host.get("name")).startswith("gpu-")]
    assert [n.status for n in lost] == ["unreachable"]

    by_name = {n.host["name"]: n for n in result.nodes if n.reason is None}
    for node in by_name.values():
        assert node.ray is not None
        assert node.host["ray_node_id"] == node.ray["node_id"]  # the report's own host section says so
        assert node.ray["python"] == sys.executable
    # Ray emptied CUDA_VISIBLE_DEVICES in gpu-a's task; the check saw the node's own value (unset): the GPU
    assert (by_name["gpu-a"].ray or {})["restored_cuda_visible_devices"] is True
    assert "no-gpu-visible" not in {f.id for f in by_name["gpu-a"].findings}
    assert by_name["gpu-a"].host["gpu_uuids"] == ["GPU-gpu-a-0"]

    fleet = summarize(result.nodes, notes=result.notes)
    groups = {f.id: set(f.nodes) for f in fleet.findings}
    assert groups["driver-too-old"] == {"gpu-b"}
    assert groups["ort-cpu-only"] == {"gpu-c"}
    drift = {d.field: d for d in fleet.drift}
    assert {v.value: v.nodes for v in drift["driver"].values} == {"580.159.04": ("gpu-a", "gpu-c"),
                                                                  "535.183.01": ("gpu-b",)}
    assert drift["driver"].only_on_failing == ("535.183.01",)
    assert "1 node on driver 535.x while onnxruntime-gpu 1.31.1 (CUDA 13.0) needs >= 580: gpu-b" in (
        drift["driver"].note or "")
    assert drift["ort_cuda"].only_on_failing == ("CPU build",)
    text = render_text(fleet)
    print(text)  # the fleet report, for the record (pytest -s)
    assert "UNREACHABLE" in text


def test_the_command_line_with_smoke_sessions_and_saved_reports(cluster: Any, tmp_path: Path) -> None:
    saved = tmp_path / "reports"
    proc = subprocess.run([sys.executable, "-m", "ortdoctor", "fleet", "--ray", cluster.address, "--json",
                           "--save-reports", str(saved)], capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert proc.returncode == 1, proc.stderr
    assert "ortdoctor fleet: 4/4 nodes done" in proc.stderr
    data = json.loads(proc.stdout)
    assert data["counts"]["nodes"] == 4
    nodes = {n["host"]["name"]: n for n in data["nodes"]}
    # the smoke session ran in each GPU build's node and failed there: the fake driver has no libcuda
    assert nodes["gpu-a"]["smoke"] == "failed"
    assert nodes["gpu-c"]["smoke"] == "not run"
    assert {f["id"] for f in nodes["gpu-b"]["findings"]} >= {"driver-too-old", "smoke-fell-back-to-cpu"}

    # the saved reports merge into the same fleet: the node that never answered has its record too
    files = sorted(p.name for p in saved.iterdir())
    assert len(files) == 4, files
    assert [f[:6] for f in files if f.startswith("gpu-")] == ["gpu-a-", "gpu-b-", "gpu-c-"], files
    merged = subprocess.run([sys.executable, "-m", "ortdoctor", "fleet", "merge", "--json", str(saved)],
                            capture_output=True, text=True, timeout=60, cwd=ROOT)
    again = {n["host"]["ray_node_id"]: (n["status"], n["reason"]) for n in json.loads(merged.stdout)["nodes"]}
    assert again == {n["host"]["ray_node_id"]: (n["status"], n["reason"]) for n in data["nodes"]}
    assert sorted(status for status, _ in again.values()).count("unreachable") == 1


def test_a_hanging_check_is_killed_at_the_time_limit(cluster: Any, tmp_path: Path) -> None:
    from ortdoctor.fleet.ray_runner import run_on_ray

    pids = tmp_path / "pids"
    pids.mkdir()
    wrapper = tmp_path / "python"
    # the serving "Python": hangs where the node says HANG, else runs the real one
    wrapper.write_text(f'#!/bin/sh\nif [ -n "$HANG" ]; then echo $$ > {pids}/hang; exec sleep 300; fi\n'
                       f'exec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    result = run_on_ray(cluster.address, timeout=5, no_smoke=True, python=str(wrapper))
    statuses = _statuses(result.nodes)
    hung = [n for n in result.nodes if n.status == "timeout"]
    assert len(hung) == 1
    assert hung[0].reason == "the check did not finish within 5 s (killed)"
    assert statuses["gpu-a"] == "warn"
    pid = int((pids / "hang").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the whole process group was killed, nothing left behind


def test_a_python_without_ortdoctor(cluster: Any, tmp_path: Path) -> None:
    from ortdoctor.fleet.ray_runner import run_on_ray

    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)
    result = run_on_ray(cluster.address, timeout=30, no_smoke=True, python=str(bare / "bin" / "python"))
    answered = [n for n in result.nodes if n.status != "unreachable"]
    assert len(answered) == 3
    for node in answered:
        assert node.status == "error"
        assert node.reason == (f"ortdoctor is not installed in {bare / 'bin' / 'python'} (the Python the check ran "
                               "with): install it there, pass --python with the serving environment's interpreter, "
                               "or --ship to send this ortdoctor along")

    # --ship: this ortdoctor goes along (runtime_env py_modules), and the same bare Python runs the check
    shipped = run_on_ray(cluster.address, timeout=60, no_smoke=True, python=str(bare / "bin" / "python"), ship=True)
    statuses = _statuses(shipped.nodes)
    assert {k: v for k, v in statuses.items() if k.startswith("gpu-")} == {"gpu-a": "warn", "gpu-b": "fail",
                                                                           "gpu-c": "fail"}, shipped.nodes
    for node in shipped.nodes:
        if node.reason is None:
            assert node.ray is not None
            assert node.ray["python"] == str(bare / "bin" / "python")


def test_a_node_killed_and_one_stopped_mid_run(cluster: Any, tmp_path: Path) -> None:
    """Two more raylets; while their checks run, one raylet is killed (SIGKILL) and the other stopped
    (SIGSTOP). `--json` stays one JSON document, and every node is in it with its own outcome. Last in
    the file: it leaves the cluster with a dead node more."""
    import signal
    import time

    from ray import ray_constants

    marks = tmp_path / "started"
    marks.mkdir()
    wrapper = tmp_path / "python"
    # the serving "Python": where the node says MIDRUN, says so and takes its time, so the run is
    # caught in the middle; elsewhere the real one
    wrapper.write_text(f'#!/bin/sh\nif [ -n "$MIDRUN" ]; then touch {marks}/$MIDRUN; sleep 20; fi\n'
                       f'exec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    added = {}
    for name in ("gpu-k", "gpu-s"):
        env = {**_node_env("gpu-a"), "NODE_NAME": name, "MIDRUN": name}
        added[name] = cluster.add_node(num_cpus=1, resources={name: 1}, object_store_memory=OBJECT_STORE,
                                       env_vars=env)
    cluster.wait_for_nodes()
    raylet = added["gpu-s"].all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process
    proc = subprocess.Popen([sys.executable, "-m", "ortdoctor", "fleet", "--ray", cluster.address, "--json",
                             "--no-smoke", "--timeout", "60", "--python", str(wrapper)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    stopped = False
    try:
        deadline = time.monotonic() + 120
        while not ((marks / "gpu-k").exists() and (marks / "gpu-s").exists()):
            assert time.monotonic() < deadline, "the checks never started on the added nodes"
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        added["gpu-k"].kill_raylet()
        os.kill(raylet.pid, signal.SIGSTOP)
        stopped = True
        out, err = proc.communicate(timeout=180)
    finally:
        if stopped:
            os.kill(raylet.pid, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, err
    data = json.loads(out)  # Ray's lines about the dead raylets went to stderr, not into the report
    nodes = data["nodes"]
    assert data["counts"]["nodes"] == len(nodes) == 6
    by_name = {n["host"].get("name"): n for n in nodes}
    assert {by_name[k]["status"] for k in ("gpu-a", "gpu-b", "gpu-c")} <= {"warn", "fail"}
    for node in nodes:
        assert (node["reason"] is None) == (node["status"] in ("ok", "warn", "fail")), node
    by_id = {n["host"].get("ray_node_id"): n for n in nodes}
    killed, stopped_node = by_id[added["gpu-k"].node_id], by_id[added["gpu-s"].node_id]
    print(json.dumps([killed, stopped_node], indent=1))  # for the record (pytest -s)
    assert killed["status"] in ("unreachable", "error")
    assert killed["reason"]
    # the stopped raylet's node: marked dead by its missed health checks (its worker may still answer)
    assert stopped_node["status"] in ("unreachable", "error", "timeout", "warn")
    without = [n for n in nodes if n["reason"] is not None]
    assert len(without) >= 2
    for group in data["groups"]:  # a group never speaks for a node with another reason
        reasons = {n["reason"] for n in nodes if n["label"] in group["nodes"]}
        assert len(reasons) == 1, group

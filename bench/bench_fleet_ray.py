"""Measure ``ortdoctor fleet --ray`` on 4 nodes against the slowest node's own ``ortdoctor check``.

The cluster is what tests/test_fleet_ray_venvs.py starts: four raylets on loopback, each started by
``ray start`` from a venv of its own (tests/support/ray_cluster.py) holding that node's wheels and its
fake driver (docs/fleet.md's gpu-a, gpu-b, gpu-c and gpu-d). In the same run, side by side:

* each node's own check: its venv's Python running ``python -m ortdoctor check --json`` in that node's
  environment, as an operator would on the node (the slowest node's median is the yardstick);
* the fleet run from the driver, a fresh ``ortdoctor fleet --ray ADDRESS --json`` process: connecting,
  one pinned task per node, the checks in parallel, the results back and the fleet report. Its first
  run also starts each node's Ray worker (Ray starts them on first use), so it is given apart.

Wall time, the median of ``--runs``: what an operator waits for. Each is measured with the smoke
session (the default) and with ``--no-smoke``. The target (issue: "a 4-node Ray run <= 1.5x the
slowest node's own check") is checked on the warm runs; a miss makes the bench exit 1.

Usage: ORTDOCTOR_TESTENVS=... python bench/bench_fleet_ray.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import fleet_reports, testenvs  # noqa: E402
from tests.support.fleet_reports import NODES  # noqa: E402
from tests.support.ray_cluster import RayCluster, make_venv  # noqa: E402

TARGET = 1.5  # the fleet run's wall time over the slowest node's own check
NAMES = ("gpu-a", "gpu-b", "gpu-c", "gpu-d")


def _env(name: str) -> dict[str, str]:
    node = next(n for n in NODES if n.name == name)
    env = fleet_reports.node_environ(node, nvml_dir=fleet_reports.nvml_dir())
    env.pop("PYTHONPATH", None)  # the node's wheels are in its venv
    return {**env, "NODE_NAME": name}


# Ray's own floor for the same run: a fresh driver that connects and runs one no-op task pinned to each
# node (Ray starts a worker per node for every new job), then disconnects
_NOOP_JOB = """
import sys, time
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
t = time.perf_counter()
noop = ray.remote(num_cpus=0)(lambda: None)
ray.get([noop.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote()
         for n in ray.nodes() if n["Alive"]])
print(time.perf_counter() - t)
ray.shutdown()
"""


def _timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    return time.perf_counter() - started, proc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="ortdoctor-fleet-ray-bench-"))
    temp = Path(tempfile.mkdtemp(prefix="od-ray-", dir="/tmp"))  # unix socket paths: 107 bytes at most
    cluster = RayCluster(temp, work)
    missed = []
    try:
        pythons, envs = {}, {}
        started = time.perf_counter()
        for n, name in enumerate(NAMES, 1):
            node = next(x for x in NODES if x.name == name)
            pythons[name] = make_venv(work / f"venv-{name}", [str(testenvs.ensure(e)) for e in node.envs])
            envs[name] = _env(name)
            cluster.add(name, pythons[name], envs[name], resources=f'{{"{name}": 1}}')
            cluster.wait(n)  # one at a time: raylets starting together on 2 cores miss Ray's deadline
        print(f"cluster of {len(NAMES)} raylets (ray start, one venv each) up in "
              f"{time.perf_counter() - started:.1f} s at {cluster.address}")
        print(f"\n{'measurement':<44} {'runs':>4} {'median s':>9} {'min s':>7} {'max s':>7}")

        def row(label: str, times: list[float]) -> float:
            med = statistics.median(times)
            print(f"{label:<44} {len(times):>4} {med:>9.2f} {min(times):>7.2f} {max(times):>7.2f}")
            return med

        noop, tasks = [], []
        for _ in range(args.runs):
            took, proc = _timed([sys.executable, "-c", _NOOP_JOB, cluster.address])
            assert proc.returncode == 0, proc.stderr
            noop.append(took)
            tasks.append(float(proc.stdout.split()[-1]))
        row("Ray alone: a no-op task on each node", noop)
        row("  of which connected to last answer", tasks)
        for flags in ([], ["--no-smoke"]):
            mode = " ".join(flags) or "(smoke on)"
            own = {}
            for name in NAMES:
                times = []
                for _ in range(args.runs):
                    took, proc = _timed([str(pythons[name]), "-m", "ortdoctor", "check", "--json", *flags],
                                        env=envs[name])
                    assert proc.returncode in (0, 1), proc.stderr
                    times.append(took)
                own[name] = row(f"{name}: own check {mode}", times)
            fleet_argv = [sys.executable, "-m", "ortdoctor", "fleet", "--ray", cluster.address, "--json", *flags]
            first = None
            times: list[float] = []
            inside: list[float] = []  # "checked over Ray in N s": from connected to the last answer
            for k in range(args.runs + (1 if not flags else 0)):
                took, proc = _timed(fleet_argv)
                assert proc.returncode in (0, 1), proc.stderr
                data = json.loads(proc.stdout)
                assert data["counts"]["nodes"] == len(NAMES), proc.stdout[:2000]
                inside.extend(float(n.split()[-2]) for n in data["notes"] if n.startswith("checked over Ray in"))
                if k == 0 and not flags:
                    first = took  # workers started on first use
                else:
                    times.append(took)
            if first is not None:
                print(f"{'fleet --ray, first run (starts the workers)':<44} {1:>4} {first:>9.2f}")
            fleet = row(f"fleet --ray {mode} (warm)", times)
            row("  of which connected to last answer", inside[-len(times):])
            slowest = max(own, key=lambda k: own[k])
            ratio = fleet / own[slowest]
            print(f"  -> {ratio:.2f}x the slowest node's own check ({slowest}, {own[slowest]:.2f} s); target "
                  f"{TARGET:.1f}x" + ("  MISSED" if ratio > TARGET else ""))
            if ratio > TARGET:
                missed.append(mode)
        print(f"\nload average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    finally:
        cluster.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    if missed:
        raise SystemExit(f"missed the {TARGET}x target: {', '.join(missed)}")


if __name__ == "__main__":
    main()

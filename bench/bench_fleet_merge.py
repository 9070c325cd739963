"""Measure ``ortdoctor fleet merge`` on 10,000 reports against plain ``json.loads`` of the same reports.

The reports are real ``ortdoctor check --json --no-smoke`` output of this machine (the GPU build with the
CUDA 13 wheels and the CPU build, from the test environments when they are provisioned), varied per
node the way a fleet varies: the host section (node, pod, Slurm task, Ray node id, GPU UUIDs), the
timings, and one node in ten on an older driver. Three inputs are written, as a cluster hands them back:

* ``reports.jsonl``: one compact report per line (what a log collector or a script would keep);
* ``kubectl.log``: ``kubectl logs --prefix --timestamps`` of docs/fleet.md's Indexed Job, one compact
  report per pod;
* ``kubectl-pretty.log``: the same of pods that print pretty reports, their lines interleaved 8 at a
  time (parallel streams, ``kubectl logs -f``): some 800 lines per report, the worst case;
* ``dir/``: one pretty ``<node>.json`` per node (``--save-reports``, or ``srun --output``);
* ``bomb.json.gz`` (shape ``bomb``): 1 MB of gzip holding one 1 GB line that starts like a report, beside
  the others: memory must stay near the 64 MiB report limit (the line becomes one node in error, and the
  reading of that file stops there).

Each measurement is a fresh interpreter that reads one input and reports its CPU time (user + system,
``resource.getrusage``: wall time on a shared machine says more about the neighbours than about the
merge) and its peak memory (``VmHWM`` of /proc/self/status). The floor, in the same run, is ``json.loads``
of the same reports: every line of ``reports.jsonl`` one at a time (``anchor``), and every file of
``dir/`` read and decoded (``anchor dir``), keeping nothing. A bare interpreter's peak memory is given too.

The targets (:data:`TARGETS`, CPU seconds for 10,000 reports, scaled by ``--nodes``): 1 s as JSON lines,
2 s from a directory or a ``kubectl logs --prefix --timestamps`` stream, compact or pretty. A target
missed makes the bench exit 1 (the pretty interleaved stream misses its own: docs/fleet.md).

Usage: python bench/bench_fleet_merge.py [--nodes 10000] [--runs 3] [--shapes jsonl,kubectl,dir,kubectl-pretty,bomb]
       [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

# CPU seconds per 10,000 reports (issue: "fleet merge of 10,000 reports <= 1 s of CPU as JSON lines and
# <= 2 s from a directory or a kubectl logs stream")
TARGETS = {"merge jsonl": 1.0, "merge kubectl": 2.0, "merge dir": 2.0, "merge kubectl-pretty": 2.0}

ROOT = Path(__file__).resolve().parents[1]
TESTENVS = Path(os.environ.get("ORTDOCTOR_TESTENVS", ROOT / ".testenvs"))

_MEASURE = r"""
import json, os, resource, sys, time

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

what, path = sys.argv[1], sys.argv[2]
t, c = time.perf_counter(), cpu()
if what == "anchor dir":
    n = 0
    for name in sorted(os.listdir(path)):
        with open(os.path.join(path, name), encoding="utf-8") as f:
            json.loads(f.read())
        n += 1
elif what == "anchor":
    n = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            json.loads(line)
            n += 1
elif what == "bare":
    n = 0
else:
    from ortdoctor.fleet.merge import merge
    fleet = merge([path])
    n = len(fleet.nodes)
    if what == "merge+render":
        from ortdoctor.fleet.render import dumps, render_text
        render_text(fleet)
        dumps(fleet)
elapsed, used = time.perf_counter() - t, cpu() - c
# VmHWM, the peak resident set of this process (ru_maxrss would carry the parent's over exec on Linux)
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"n": n, "seconds": elapsed, "cpu": used, "maxrss_kib": hwm}))
"""


def _base_reports() -> list[dict[str, Any]]:
    """Real reports: the GPU build with its CUDA wheels, and the CPU build (where provisioned)."""
    setups = [[str(ROOT)]]
    if (TESTENVS / "ort-gpu" / ".complete").exists():
        setups = [[str(ROOT), str(TESTENVS / "ort-gpu"), str(TESTENVS / "nvidia-cu13")],
                  [str(ROOT), str(TESTENVS / "ort-cpu")]]
    out = []
    for paths in setups:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        proc = subprocess.run([sys.executable, "-m", "ortdoctor", "check", "--json", "--no-smoke"], env=env,
                              capture_output=True, text=True, cwd=ROOT, timeout=120)
        out.append(json.loads(proc.stdout))
    return out


def _vary(base: list[dict[str, Any]], n: int, rng: random.Random) -> list[dict[str, Any]]:
    """``n`` nodes: 90% the first (GPU) setup, the rest the second; one in ten on driver 535."""
    nodes = []
    for i in range(n):
        rep = json.loads(json.dumps(base[0] if i % 10 < 9 or len(base) == 1 else base[1]))
        name = f"gpu-{i:05d}"
        rep["host"] = {**(rep.get("host") or {}), "name": name, "hostname": f"ortdoctor-{i:05d}",
                       "k8s_node_name": name, "k8s_pod_name": f"ortdoctor-{rng.getrandbits(24):06x}",
                       "ray_node_id": f"{rng.getrandbits(224):056x}", "gpu_uuids": [f"GPU-{i:05d}-{g}" for g in range(8)]}
        if i % 10 == 3:
            rep["driver"] = {**rep.get("driver", {}), "available": True, "version": "535.183.01", "cuda_version": "12.2"}
        rep["timings_ms"] = {**rep.get("timings_ms", {}), "total": round(rng.uniform(200, 900), 2)}
        nodes.append(rep)
    return nodes


def _write_inputs(nodes: list[dict[str, Any]], into: Path) -> dict[str, Path]:
    jsonl = into / "reports.jsonl"
    with open(jsonl, "w", encoding="utf-8") as f:
        for rep in nodes:
            f.write(json.dumps(rep, separators=(",", ":")) + "\n")
    directory = into / "dir"
    directory.mkdir()
    for rep in nodes:
        (directory / f"{rep['host']['name']}.json").write_text(json.dumps(rep, indent=2) + "\n")
    # kubectl logs --prefix --timestamps of docs/fleet.md's Indexed Job: one compact report per pod
    compact = into / "kubectl.log"
    with open(compact, "w", encoding="utf-8") as f:
        for rep in nodes:
            f.write(f"[pod/{rep['host']['k8s_pod_name']}/ortdoctor] 2026-12-01T10:00:00.123456789Z "
                    f"{json.dumps(rep, separators=(',', ':'))}\n")
    # the same of pods printing pretty reports, their lines interleaved 8 at a time (`kubectl logs -f`
    # of parallel streams): the worst case, some 800 lines per report
    log = into / "kubectl-pretty.log"
    with open(log, "w", encoding="utf-8") as f:
        for start in range(0, len(nodes), 8):
            group = [(f"[pod/{r['host']['k8s_pod_name']}/ortdoctor] ", json.dumps(r, indent=2).splitlines())
                     for r in nodes[start:start + 8]]
            longest = max(len(lines) for _, lines in group)
            for j in range(longest):
                for prefix, lines in group:
                    if j < len(lines):
                        f.write(f"{prefix}2026-12-01T10:00:00.{j:09d}Z {lines[j]}\n")
    return {"jsonl": jsonl, "kubectl": compact, "kubectl-pretty": log, "dir": directory}


def _write_bomb(into: Path) -> Path:
    """1 MB of gzip: one line of 1 GB that starts like a report."""
    import gzip

    bomb = into / "bomb.json.gz"
    with gzip.open(bomb, "wb") as g:
        g.write(b'{"schema_version": 2, "verdict": "ok", "findings": [], "x": "')
        chunk = b"A" * (1 << 20)
        for _ in range(1024):
            g.write(chunk)
        g.write(b'"}\n')
    return bomb


def _measure(what: str, path: Path, runs: int) -> dict[str, float]:
    results = []
    for _ in range(runs):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run([sys.executable, "-c", _MEASURE, what, str(path)], capture_output=True, text=True,
                              env=env, cwd=tempfile.gettempdir())
        if proc.returncode != 0:
            raise SystemExit(f"{what} {path} failed:\n{proc.stderr}")
        results.append(json.loads(proc.stdout))
    return {"n": results[0]["n"], "seconds": statistics.median(r["seconds"] for r in results),
            "cpu": min(r["cpu"] for r in results),  # the least: the run the neighbours disturbed least
            "maxrss_mib": statistics.median(r["maxrss_kib"] for r in results) / 1024}


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir())
    return path.stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shapes", default="jsonl,kubectl,dir,kubectl-pretty,bomb",
                    help="which inputs to merge (comma-separated)")
    ap.add_argument("--keep", type=Path, default=None,
                    help="write the inputs here and keep them (reused when it holds them already)")
    args = ap.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="ortdoctor-fleet-bench-"))
    if args.keep is not None and (work / "reports.jsonl").exists():
        inputs = {"jsonl": work / "reports.jsonl", "kubectl": work / "kubectl.log",
                  "kubectl-pretty": work / "kubectl-pretty.log", "dir": work / "dir"}
        print(f"inputs kept in {work}")
    else:
        base = _base_reports()
        print(f"base reports: {len(base)} (pretty {', '.join(str(len(json.dumps(b, indent=2))) for b in base)} bytes)")
        work.mkdir(parents=True, exist_ok=True)
        inputs = _write_inputs(_vary(base, args.nodes, random.Random(20261201)), work)
    missed = []
    try:
        for name, path in inputs.items():
            print(f"input {name}: {_size(path) / 2**20:.0f} MiB")
        anchor = _measure("anchor", inputs["jsonl"], args.runs)
        anchor_dir = _measure("anchor dir", inputs["dir"], args.runs)
        bare = _measure("bare", inputs["jsonl"], args.runs)
        print(f"\n{'measurement':<34} {'nodes':>6} {'wall s':>7} {'CPU s':>6} {'x floor':>8} {'target':>7} "
              f"{'peak MiB':>9}")

        def row(label: str, m: dict[str, float], floor: dict[str, float] | None, target: float | None) -> None:
            ratio = f"{m['cpu'] / floor['cpu']:.2f}" if floor else ""
            goal = f"{target:.2f}" if target is not None else ""
            print(f"{label:<34} {int(m['n']):>6} {m['seconds']:>7.2f} {m['cpu']:>6.2f} {ratio:>8} {goal:>7} "
                  f"{m['maxrss_mib']:>9.0f}" + ("  MISSED" if target is not None and m["cpu"] > target else ""))
            if target is not None and m["cpu"] > target:
                missed.append(label)

        row("anchor: json.loads each line", anchor, anchor, None)
        row("anchor dir: json.loads each file", anchor_dir, anchor_dir, None)
        print(f"{'bare interpreter':<34} {'':>6} {'':>7} {'':>6} {'':>8} {'':>7} {bare['maxrss_mib']:>9.0f}")
        shapes = args.shapes.split(",")
        for what, shape in (("merge", "jsonl"), ("merge+render", "jsonl"), ("merge", "kubectl"), ("merge", "dir"),
                            ("merge", "kubectl-pretty")):
            if shape not in shapes:
                continue
            m = _measure(what, inputs[shape], args.runs)
            assert m["n"] == args.nodes, m
            target = TARGETS.get(f"{what} {shape}")
            row(f"{what} {shape}", m, anchor_dir if shape == "dir" else anchor,
                target * args.nodes / 10_000 if target is not None else None)
        if "bomb" in shapes:
            bomb = _write_bomb(work)
            m = _measure("merge", bomb, args.runs)
            assert m["n"] == 1, m  # the line is one node in error
            print(f"input bomb: {_size(bomb) >> 10} KiB of gzip")
            row("merge bomb (1 GiB line)", m, None, None)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    if missed:
        raise SystemExit(f"missed the CPU target: {', '.join(missed)}")


if __name__ == "__main__":
    main()

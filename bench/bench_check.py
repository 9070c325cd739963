"""Benchmark `ortdoctor check --no-smoke` (wall time of the whole command, interpreter start included),
run as the `ortdoctor` console script runs it; the JSON report, also through `python -m`, is shown beside.

    python bench/bench_check.py [--runs N] [--sitedirs DIR ...]

Without --sitedirs the environments are the test suite's (tests/support/testenvs.py); with it, those
directories go on PYTHONPATH as they are (on the GPU machine: the onnxruntime-gpu --target directory;
the interpreter's own site-packages is there anyway) and LD_LIBRARY_PATH is kept, so NVML is found.

1. Against `python -c "import onnxruntime; onnxruntime.print_debug_info()"` in the same environment
   (onnxruntime-gpu 1.31.1 + the CUDA 13 wheels, composed on PYTHONPATH). Target: <= 0.3x.
2. With 1,000 extra installed distributions (minimal dist-info directories in a site directory on
   PYTHONPATH) against none. Target: <= 1.5x.

Runs are interleaved (a, b, a, b, ...) so drift hits both sides alike; the median is reported. Both
sides run from cached bytecode, as installed packages do.
"""

from __future__ import annotations

import argparse
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

from tests.support import testenvs  # noqa: E402

# The `ortdoctor` command as pip's console script runs it (the same three lines pip writes into
# bin/ortdoctor for [project.scripts]), so that the bench needs no installed copy.
CONSOLE_SCRIPT = ("import re, sys\n"
                  "from ortdoctor.cli.entry import main\n"
                  "sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
                  "sys.exit(main())\n")
CHECK = [sys.executable, "-c", CONSOLE_SCRIPT, "check", "--no-smoke"]
# Shown beside it, not held to the target: the JSON report, and the JSON report through `python -m`.
VARIANTS = {
    "ortdoctor check --no-smoke --json": [*CHECK, "--json"],
    "python -m ortdoctor check --no-smoke --json": [sys.executable, "-m", "ortdoctor", "check", "--no-smoke", "--json"],
}
DEBUG_INFO = [sys.executable, "-c", "import onnxruntime; onnxruntime.print_debug_info()"]


# Installed packages run from cached bytecode (pip compiles it at install time); a shell with
# PYTHONDONTWRITEBYTECODE would make every run compile every module. Both sides get a bytecode
# cache, kept outside the source tree.
_PYCACHE = tempfile.mkdtemp(prefix="ortdoctor-bench-pycache-")


def _env(*paths: Path | str, keep_ld_path: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *(str(p) for p in paths)])
    if not keep_ld_path:
        env.pop("LD_LIBRARY_PATH", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = _PYCACHE
    return env


def _time(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # check exits 1 on this GPU-less machine (driver-missing)
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr.decode()[-2000:]}")
    return elapsed


def _pair(a: tuple[list[str], dict[str, str]], b: tuple[list[str], dict[str, str]], runs: int) -> tuple[float, float]:
    ta, tb = _interleaved([a, b], runs)
    return ta, tb


def _interleaved(cmds: list[tuple[list[str], dict[str, str]]], runs: int) -> list[float]:
    """The median wall time of each command, run in turn (a, b, c, a, b, c, ...) after one warm-up each."""
    for cmd in cmds:
        _time(*cmd)  # warm the page cache and the bytecode cache once
    times: list[list[float]] = [[] for _ in cmds]
    for _ in range(runs):
        for i, cmd in enumerate(cmds):
            times[i].append(_time(*cmd))
    return [statistics.median(t) for t in times]


def _fake_distributions(site: Path, count: int) -> None:
    for i in range(count):
        d = site / f"benchpkg{i:04d}-1.0.{i}.dist-info"
        d.mkdir(parents=True)
        (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: benchpkg{i:04d}\nVersion: 1.0.{i}\n")
        (d / "RECORD").write_text(f"benchpkg{i:04d}-1.0.{i}.dist-info/METADATA,,\n")
        (d / "INSTALLER").write_text("pip\n")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--sitedirs", nargs="*", default=None)
    args = parser.parse_args()
    keep = args.sitedirs is not None
    dirs = args.sitedirs if keep else [testenvs.ensure("ort-gpu"), testenvs.ensure("nvidia-cu13")]
    env = _env(*dirs, keep_ld_path=keep)

    t_check, t_debug, *t_variants = _interleaved([(CHECK, env), (DEBUG_INFO, env),
                                                   *((cmd, env) for cmd in VARIANTS.values())], args.runs)
    print(f"[1] onnxruntime-gpu + CUDA 13 wheels ({', '.join(map(str, dirs))}), median of {args.runs}:")
    print(f"    ortdoctor check --no-smoke      {t_check * 1000:8.1f} ms")
    print(f"    onnxruntime.print_debug_info()  {t_debug * 1000:8.1f} ms")
    r1 = t_check / t_debug
    print(f"    ratio {r1:.2f}x  (target <= 0.30x: {'met' if r1 <= 0.3 else 'NOT met'})")
    for name, t in zip(VARIANTS, t_variants, strict=True):
        print(f"    also: {name}  {t * 1000:.1f} ms = {t / t_debug:.2f}x")

    with tempfile.TemporaryDirectory() as tmp:
        extra = Path(tmp) / "site"
        _fake_distributions(extra, 1000)
        env_many = _env(*dirs, extra, keep_ld_path=keep)
        t_none, t_many = _pair((CHECK, env), (CHECK, env_many), args.runs)
    print(f"[2] ortdoctor check --no-smoke, median of {args.runs}:")
    print(f"    no extra distributions          {t_none * 1000:8.1f} ms")
    print(f"    1,000 extra distributions       {t_many * 1000:8.1f} ms")
    r2 = t_many / t_none
    print(f"    ratio {r2:.2f}x  (target <= 1.50x: {'met' if r2 <= 1.5 else 'NOT met'})")
    shutil.rmtree(_PYCACHE, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Measure ``import ortdoctor.hook`` against a bare dlopen script and onnxruntime.preload_dlls.

All three run as fresh interpreters in the same environment (the NVIDIA CUDA 13 wheels and
onnxruntime-gpu on PYTHONPATH), interleaved, several repetitions each; the medians are compared:

* anchor A: a bare script that dlopens, by absolute path and in the same order, exactly the files the
  hook loads (the list comes from a dry run of the same preload). Target: hook <= 1.10 x A.
* anchor B: ``import onnxruntime; onnxruntime.preload_dlls(directory="")``. Target: hook <= 0.6 x B.
* anchor C (``--torch``, where PyTorch is installed): ``import torch``, the common "import torch first"
  workaround, which maps torch's own CUDA libraries as a side effect.

Usage: python bench/bench_preload.py [--reps N] [--sitedirs DIR ...]
(default site directories: the test environments "nvidia-cu13" and "ort-gpu").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    # a neutral cwd: with `python -c` the cwd is sys.path[0], and the repository must not shadow PYTHONPATH
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=env["ORTDOCTOR_BENCH_CWD"])
    elapsed = time.perf_counter() - start
    if proc.returncode != 0 or proc.stderr.strip():
        raise SystemExit(f"benchmark command failed: {cmd}\n{proc.stdout}\n{proc.stderr}")
    return elapsed


def _merged_site(parts: list[str], into: Path) -> Path:
    """One site directory like a venv's, made of symlinks to the --target installs, so that
    onnxruntime.preload_dlls (which looks only beside onnxruntime) finds the NVIDIA wheels too."""
    into.mkdir(parents=True, exist_ok=True)
    for part in parts:
        for entry in Path(part).iterdir():
            link = into / entry.name
            if not link.exists() and not entry.name.startswith("."):
                link.symlink_to(entry)
    return into


def _cuda_mapped(code: str, env: dict[str, str]) -> list[str]:
    probe = code + ("\nimport os\nprint(sorted({os.path.basename(l.split()[-1]) for l in open('/proc/self/maps')"
                    " if '/nvidia/' in l}))")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True,
                         cwd=env["ORTDOCTOR_BENCH_CWD"])
    return eval(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--sitedirs", nargs="*", default=None)
    ap.add_argument("--torch", action="store_true", help="also time `import torch` (anchor C)")
    args = ap.parse_args()
    if args.sitedirs is None:
        sys.path.insert(0, str(ROOT))
        from tests.support.testenvs import ensure

        args.sitedirs = [str(ensure("nvidia-cu13")), str(ensure("ort-gpu"))]
    with tempfile.TemporaryDirectory(prefix="ortdoctor-bench-") as tmp:
        site = _merged_site(args.sitedirs, Path(tmp) / "site-packages")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT)])
        for k in [k for k in env if k.startswith("ORTDOCTOR_")]:
            del env[k]
        env["ORTDOCTOR_DIRECTORY"] = ""  # the same directory semantics as the preload_dlls anchor
        env["ORTDOCTOR_CACHE_DIR"] = str(Path(tmp) / "cache")
        env["ORTDOCTOR_BENCH_CWD"] = tmp
        _bench(env, args.reps, with_torch=args.torch)


def _bench(env: dict[str, str], reps: int, *, with_torch: bool = False) -> None:
    py = sys.executable
    # The files the hook loads, in its order (a dry run in a child with the same environment).
    listing = subprocess.run(
        [py, "-c", "import json, ortdoctor.preloading.preloader as p;"
                   "res = p.preload(directory='', dry_run=True);"
                   "print(json.dumps([x['path'] for x in res.to_json()['loaded']]))"],
        env={**env, "ORTDOCTOR_DISABLE": "1"}, capture_output=True, text=True, check=True,
        cwd=env["ORTDOCTOR_BENCH_CWD"])
    paths = json.loads(listing.stdout)
    bare = "import ctypes\n" + "".join(f"ctypes.CDLL({p!r})\n" for p in paths)
    ort = "import onnxruntime; onnxruntime.preload_dlls(directory='')"
    commands = {
        "bare": [py, "-c", bare],
        "ort": [py, "-c", ort],
        "hook": [py, "-c", "import ortdoctor.hook"],
        "hook-nocache": [py, "-c", "import ortdoctor.hook"],
    }
    if with_torch:
        commands["torch"] = [py, "-c", "import torch"]
    envs = dict.fromkeys(commands, env)
    envs["hook-nocache"] = {**env, "ORTDOCTOR_CACHE": "0"}
    for name, cmd in commands.items():  # warm the page cache (and the hook's cache) once
        _run(cmd, envs[name])
    mapped = {name: _cuda_mapped(cmd[2], envs[name]) for name, cmd in commands.items()}
    times: dict[str, list[float]] = {k: [] for k in commands}
    for _ in range(reps):
        for name, cmd in commands.items():  # interleaved, so drift affects all alike
            times[name].append(_run(cmd, envs[name]))
    med = {k: statistics.median(v) for k, v in times.items()}

    print(f"python {sys.version.split()[0]}; {os.cpu_count()} CPUs; {reps} repetitions each, interleaved; "
          "medians of whole-process wall time")
    for name, label in (("bare", "bare dlopen script, same files, same order (anchor A)"),
                        ("ort", "import onnxruntime; preload_dlls(directory='') (anchor B)"),
                        ("hook", "import ortdoctor.hook (validated cache)"),
                        ("hook-nocache", "import ortdoctor.hook, ORTDOCTOR_CACHE=0 (full path)"),
                        ("torch", "import torch (anchor C)")):
        if name not in med:
            continue
        print(f"  {label:<58} {med[name] * 1000:8.1f} ms   maps: {', '.join(mapped[name]) or '-'}")
    for name in ("hook", "hook-nocache"):
        ra, rb = med[name] / med["bare"], med[name] / med["ort"]
        print(f"{name:<13} / anchor A = {ra:.3f}x (target <= 1.10x: {'met' if ra <= 1.10 else 'NOT met'});"
              f"  / anchor B = {rb:.3f}x (target <= 0.60x: {'met' if rb <= 0.60 else 'NOT met'})")
    print(f"anchor B / anchor A = {med['ort'] / med['bare']:.3f}x")
    if "torch" in med:
        for name in ("hook", "hook-nocache"):
            print(f"{name:<13} / anchor C (import torch) = {med[name] / med['torch']:.3f}x")


if __name__ == "__main__":
    main()

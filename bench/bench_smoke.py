"""Time of ortdoctor's smoke run against a hand-written script that does only preload, session and run.

Both sides are measured the same way: wall time of a fresh Python process, from spawn to exit, as
``ortdoctor check`` pays it. ortdoctor's side is ``run_smoke()`` (child: ortdoctor's preload, import,
session with fallback disabled, first run + 10 steady runs, numpy comparison, JSON result); the
baseline is a minimal script (onnxruntime.preload_dlls(), import, session, one run).

    python bench/bench_smoke.py                  # the provider this machine can run: see --ep
    python bench/bench_smoke.py --ep CUDAExecutionProvider   # on the GPU machine (target <= 1.3x)

On a machine without a GPU the CUDA side cannot succeed; ``--ep CPUExecutionProvider`` (the default
when no NVIDIA driver is present) times the same child on the CPU provider, and ``--failing-gpu`` times
the failing CUDA path (the smoke run a GPU-less machine really performs). PYTHONPATH selects the
onnxruntime under test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ortdoctor.prove.smoke.model import build_model  # noqa: E402
from ortdoctor.prove.smoke.runner import SmokeRequest, run_smoke  # noqa: E402

_BASELINE = """
import sys
import numpy as np
import onnxruntime as ort
if hasattr(ort, "preload_dlls") and sys.argv[2] == "CUDAExecutionProvider":
    ort.preload_dlls()
sess = ort.InferenceSession(sys.argv[1], providers=[sys.argv[2]])
x = np.random.default_rng(0).uniform(-1, 1, (256, 256)).astype(np.float32)
sess.run(None, {"X": x})
"""


def _time_baseline(model_path: str, ep: str) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _BASELINE, model_path, ep], capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0 and ep != "CUDAExecutionProvider":
        raise SystemExit(f"baseline failed:\n{proc.stderr[-2000:]}")
    return elapsed


def _time_smoke(ep: str) -> tuple[float, bool, dict[str, float]]:
    t0 = time.perf_counter()
    result = run_smoke(SmokeRequest(ep=ep, timeout=120))
    return time.perf_counter() - t0, result.ok, dict(result.timings_ms)


def _time_check(*extra: str) -> float:
    """The whole `ortdoctor check --json` process: inspection, resolution, diagnosis and the smoke run."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*os.environ.get("PYTHONPATH", "").split(os.pathsep), str(ROOT)])}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # installed packages run from cached bytecode
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ortdoctor", "check", "--json", *extra], capture_output=True, env=env,
                   cwd=tempfile.gettempdir())
    return time.perf_counter() - t0


def main() -> int:
    has_driver = any(Path(p).exists() for p in ("/dev/nvidiactl", "/proc/driver/nvidia/version"))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ep", default="CUDAExecutionProvider" if has_driver else "CPUExecutionProvider")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--failing-gpu", action="store_true", help="also time the CUDA path that fails here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        model_path = os.path.join(tmp, "smoke.onnx")
        Path(model_path).write_bytes(build_model(256).data)
        eps = [args.ep] + (["CUDAExecutionProvider"] if args.failing_gpu and args.ep != "CUDAExecutionProvider" else [])
        for ep in eps:
            # `check` always runs its smoke session on the CUDA EP: its figures go with that provider.
            with_check = ep == "CUDAExecutionProvider"
            _time_baseline(model_path, ep)  # warm the page cache and the bytecode cache for every side
            _time_smoke(ep)
            if with_check:
                _time_check(), _time_check("--no-smoke")
            base: list[float] = []
            smoke: list[tuple[float, bool, dict[str, float]]] = []
            checks: list[float] = []
            no_smoke: list[float] = []
            for _ in range(args.repeat):  # interleaved, so drift hits every side alike
                base.append(_time_baseline(model_path, ep))
                smoke.append(_time_smoke(ep))
                if with_check:
                    checks.append(_time_check())
                    no_smoke.append(_time_check("--no-smoke"))
            b, s = statistics.median(base), statistics.median(t for t, _, _ in smoke)
            oks = {ok for _, ok, _ in smoke}
            print(f"provider {ep}: smoke ok={sorted(oks)}")
            print(f"  hand-written (spawn, preload, session, 1 run): median {b * 1000:8.1f} ms over {args.repeat}")
            print(f"  ortdoctor run_smoke (spawn + child + judge):   median {s * 1000:8.1f} ms over {args.repeat}")
            print(f"  ratio ortdoctor / hand-written: {s / b:.2f}x (target on the GPU machine: <= 1.3x)")
            stages = [k for k in ("preload", "import", "session", "first_run") if all(k in t for _, _, t in smoke)]
            if stages:  # the child's own stage timers: where its time went
                print("  child stages (median ms): " + ", ".join(
                    f"{k} {statistics.median(t[k] for _, _, t in smoke):.1f}" for k in stages))
            if checks:
                c, n = statistics.median(checks), statistics.median(no_smoke)
                print(f"  whole `ortdoctor check --json` (inspect + smoke): median {c * 1000:8.1f} ms"
                      f" -> {c / b:.2f}x the hand-written script (target on the GPU machine: <= 1.3x)")
                print(f"  `ortdoctor check --no-smoke --json`:              median {n * 1000:8.1f} ms"
                      f" -> the smoke session adds {(c - n) * 1000:.1f} ms to it ({(c - n) / s:.2f}x run_smoke alone)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Measure ``ortdoctor lint`` on a monorepo of 1,000 files (target: under 1 s).

The monorepo is built from the real files of ``tests/data/lint/`` (requirement files, pyproject.toml,
poetry.lock, Dockerfiles from public repositories that use onnxruntime-gpu), copied into service
directories until it holds ``--files`` files lint reads, among other files it must skip (sources,
READMEs) as a repository has them. Each run is a fresh interpreter running ``python -m ortdoctor lint
--json DIR`` (start-up, imports, the matrix and every file read), timed from outside; the in-process time
of ``lint_paths`` alone is reported too.

``--plain`` builds the other kind of monorepo, the common one: services whose requirement files and
pyproject.toml name no onnxruntime, torch or NVIDIA package (lint reads each and skips its parse).

Usage: python bench/bench_lint.py [--files 1000] [--runs 5] [--keep DIR] [--plain]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "lint"


def build(target: Path, files: int) -> int:
    """Copy the real cases into service directories until ``files`` linted files exist; returns the count."""
    cases = sorted(p for p in DATA.iterdir() if p.is_dir())
    count = 0
    n = 0
    while count < files:
        case = cases[n % len(cases)]
        service = target / f"services/svc{n:04d}"
        for src in case.rglob("*"):
            if (src.is_file() and src.name not in ("source.json", "expected.json") and src.suffix != ".gz"
                    and count < files):
                dst = service / src.relative_to(case)
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)
                count += 1
        (service / "main.py").write_text("print('hello')\n", encoding="utf-8")
        (service / "README.md").write_text(f"# service {n}\n", encoding="utf-8")
        n += 1
    return count


def build_plain(target: Path, files: int) -> int:
    """Services whose files name no package a rule reads: a requirements file and a pyproject.toml each."""
    for n in range(files // 2):
        service = target / f"services/svc{n:04d}"
        service.mkdir(parents=True, exist_ok=True)
        (service / "requirements.txt").write_text("requests==2.31.0\nnumpy>=1.26\nfastapi\n"
                                                  "uvicorn[standard]==0.30.1\npydantic>=2\n", encoding="utf-8")
        (service / "pyproject.toml").write_text(
            f'[project]\nname = "svc{n}"\nversion = "1"\nrequires-python = ">=3.10"\n'
            'dependencies = ["requests", "numpy"]\n\n[tool.ruff]\nline-length = 100\n', encoding="utf-8")
        (service / "main.py").write_text("print('hello')\n", encoding="utf-8")
    return files // 2 * 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", type=Path, help="build the monorepo here and keep it")
    ap.add_argument("--plain", action="store_true", help="files that name no package a rule reads")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="ortdoctor-lint-bench-"))
    try:
        count = (build_plain if args.plain else build)(work, args.files)
        walls: list[float] = []
        cpus: list[float] = []
        report: dict[str, object] = {}
        for _ in range(args.runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "ortdoctor", "lint", "--json", str(work)],
                                  capture_output=True, text=True, check=False, cwd=ROOT)
            walls.append(time.perf_counter() - t)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            # CPU time: on a machine others share, the wall time measures them too
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            report = json.loads(proc.stdout)
        sys.path.insert(0, str(ROOT))
        from ortdoctor.decide.matrix.load import load_matrix
        from ortdoctor.doctor.lint import lint_paths
        matrix = load_matrix()
        inner: list[float] = []
        for _ in range(args.runs):
            t = time.perf_counter()
            lint_paths([str(work)], matrix=matrix)
            inner.append(time.perf_counter() - t)
        files_read = len(report.get("files", []))  # type: ignore[arg-type]
        findings = len(report.get("findings", []))  # type: ignore[arg-type]
        print(f"monorepo: {count} files to lint ({files_read} read, requirement files included by others "
              f"counted once), {findings} findings")
        print(f"ortdoctor lint --json, fresh interpreter: median {statistics.median(walls) * 1000:.0f} ms, "
              f"min {min(walls) * 1000:.0f} ms over {args.runs} runs; CPU time median "
              f"{statistics.median(cpus) * 1000:.0f} ms")
        print(f"lint_paths() in process (matrix loaded): median {statistics.median(inner) * 1000:.0f} ms")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

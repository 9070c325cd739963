#!/usr/bin/env bash
# The speed figures of docs/performance.md on a GPU machine: `check --no-smoke` against
# `print_debug_info()` (bench_check.py, twice), `import ortdoctor.hook` against its anchors
# (bench_preload.py), and where the time of one `check --no-smoke --json` goes (-X importtime, cProfile).
#
# Usage, from the repository root:
#   ORTGPU=/path/to/onnxruntime-gpu/--target/dir OUT=/some/dir scripts/gpu_speed.sh
#
# ORTGPU holds onnxruntime-gpu installed with `pip install --no-deps --target`; python3 supplies the rest
# (on the H200: torch and its CUDA 13 wheels). Everything goes to $OUT/speed.log and $OUT/*.txt.
set -u
ROOT=$(pwd)
OUT=${OUT:?set OUT}
ORTGPU=${ORTGPU:?set ORTGPU}
PY=${PY:-python3}
LOG=$OUT/speed.log
mkdir -p "$OUT"
SITE=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
run() {
  printf '$ %s\n' "$*" >>"$LOG"
  (cd /tmp && bash -c "$*") >>"$LOG" 2>&1
  printf '[exit %s]\n' "$?" >>"$LOG"
}
run "git -C $ROOT log -1 --format=%h 2>/dev/null; nproc; $PY -V"
run "$PY $ROOT/bench/bench_check.py --runs 15 --sitedirs $ORTGPU"
run "$PY $ROOT/bench/bench_check.py --runs 15 --sitedirs $ORTGPU"
run "PYTHONPATH=$ORTGPU:$ROOT $PY $ROOT/bench/bench_preload.py --reps 11 --sitedirs $ORTGPU $SITE"
# Where one check's time goes (the bytecode is cached by the benches' first runs)
(cd /tmp && PYTHONPATH=$ROOT:$ORTGPU $PY -X importtime -m ortdoctor check --no-smoke --json \
  >/dev/null 2>"$OUT/importtime.txt")
(cd /tmp && PYTHONPATH=$ROOT:$ORTGPU $PY -m cProfile -s cumulative -m ortdoctor check --no-smoke --json \
  2>&1 | grep -v '^{' | head -120 >"$OUT/cprofile.txt")
(cd /tmp && PYTHONPATH=$ROOT:$ORTGPU $PY -m ortdoctor check --no-smoke --debug >"$OUT/check_debug.txt" 2>&1)
echo "done: $LOG"

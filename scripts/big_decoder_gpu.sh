#!/usr/bin/env bash
# `check --model` on a multi-GB float16 decoder, against a hand-written proof on the same file: one script,
# one GPU machine, about 8 minutes with the export.
#
# Usage, from the repository root:
#   ORTGPU=/path/to/onnxruntime-gpu/--target/dir OUT=/some/dir scripts/big_decoder_gpu.sh
# Optional: LAYERS=36 HIDDEN=2560 VOCAB=50257 (2.96 B parameters, 5.9 GB in float16), WORK=/tmp/big_decoder
# (where the model is written; an export already there for the same configuration is reused), RUNS=2
# (interleaved runs of each side), COMPARE_LIMIT (GiB: check --model's --compare-limit, for both sides;
# default its own, from free host memory), PY=python3 (runs ortdoctor and the bench, with ORTGPU first on its path),
# EXPORT_PY=$PY (torch, transformers, onnx and a CPU onnxruntime: the export never sees ORTGPU).
#
# Phases, each timed:
#   1. scripts/export_big_decoder.py: float32 export by torch.onnx, onnxruntime's float16 converter, one
#      external data file;
#   2. `ortdoctor check --no-smoke --model` once, the human report (the "compared" line says which part of
#      the model the CPU EP's reference covered, and why);
#   3. bench/bench_model_check.py: `check --no-smoke --json --model` against the hand-written proof (CUDA
#      session, three runs, the CPU EP's reference on the same part, compare), wall time and peak host
#      memory of each (ru_maxrss of every process of a run), the ratio. Targets: <= 1.5x, <= 1.3x the model.
# Only the log ($OUT/big_decoder_gpu.log) goes to $OUT; the model stays under $WORK.
#
# Without a CUDA EP (a CPU build as ORTGPU, a machine without a GPU) the same script runs end to end: both
# sides then skip the session under test the same way. The small dry run on any machine:
#   LAYERS=6 HIDDEN=256 VOCAB=1024 COMPARE_LIMIT=0.01 ORTGPU=<onnxruntime CPU site dir> OUT=/tmp/out \
#     scripts/big_decoder_gpu.sh
# (COMPARE_LIMIT puts that 11 MiB model above the limit, so the first blocks are compared, as at full size.)
set -u
ROOT=$(pwd)
OUT=${OUT:?set OUT}
ORTGPU=${ORTGPU:?set ORTGPU}
PY=${PY:-python3}
EXPORT_PY=${EXPORT_PY:-$PY}
LAYERS=${LAYERS:-36}
HIDDEN=${HIDDEN:-2560}
VOCAB=${VOCAB:-50257}
RUNS=${RUNS:-2}
WORK=${WORK:-/tmp/big_decoder}
LIMIT=${COMPARE_LIMIT:+--compare-limit $COMPARE_LIMIT}
LOG=$OUT/big_decoder_gpu.log
MODEL=$WORK/model.onnx
CONFIG="layers=$LAYERS hidden=$HIDDEN vocab=$VOCAB"
mkdir -p "$OUT" "$WORK"
: >"$LOG"
export PYTHONUNBUFFERED=1
START=$(date +%s.%N)

say() { printf '\n=== %s\n' "$*" | tee -a "$LOG"; }
elapsed() { "$PY" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f} s')" "$1" "$(date +%s.%N)"; }
run() {  # a command, its output and exit status, and its wall time, into the log (and the terminal)
  local t0
  t0=$(date +%s.%N)
  printf '$ %s\n' "$*" | tee -a "$LOG"
  bash -c "$*" 2>&1 | tee -a "$LOG"
  printf '[exit %s, %s]\n' "${PIPESTATUS[0]}" "$(elapsed "$t0")" | tee -a "$LOG"
}

say "0. The machine"
run "date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | head -3; nproc; free -g | head -2; df -h $WORK | tail -1"
run "PYTHONPATH=$ORTGPU:$ROOT $PY -c 'import onnxruntime as o, numpy; print(o.__version__, o.__file__, o.get_available_providers(), numpy.__version__)'"
run "$EXPORT_PY -c 'import torch, transformers, onnx, onnxruntime; print(\"torch\", torch.__version__, torch.cuda.is_available(), \"transformers\", transformers.__version__, \"onnx\", onnx.__version__, \"onnxruntime\", onnxruntime.__version__)'"

say "1. Export ($CONFIG, float16, external data)"
if [ -s "$MODEL" ] && [ -s "$MODEL.data" ] && [ "$(cat "$WORK/config" 2>/dev/null)" = "$CONFIG" ]; then
  echo "reusing $MODEL ($CONFIG)" | tee -a "$LOG"
else
  rm -f "$WORK/config"
  run "$EXPORT_PY $ROOT/scripts/export_big_decoder.py $WORK --layers $LAYERS --hidden $HIDDEN --vocab $VOCAB 2>&1 | grep -v -e Warning -e '^  ' -e '^\[transformers\]'"
  [ -s "$MODEL.data" ] && echo "$CONFIG" >"$WORK/config"
fi
run "ls -la $WORK"

say "2. ortdoctor check --no-smoke --model (the human report)"
run "PYTHONPATH=$ORTGPU:$ROOT $PY -m ortdoctor check --no-smoke --timeout 400 $LIMIT --model $MODEL | grep -v -e '^    fix:' | head -60"

say "3. check --model against the hand-written proof: wall time, peak host memory ($RUNS runs each, interleaved)"
run "PYTHONPATH=$ROOT $PY $ROOT/bench/bench_model_check.py --ep cuda --runs $RUNS $LIMIT --sitedirs $ORTGPU --model $MODEL"

say "done in $(elapsed "$START"): $LOG"

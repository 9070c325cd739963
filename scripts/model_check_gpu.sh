#!/usr/bin/env bash
# `ortdoctor check --model` on every fixture of tests/data/models on a machine with an NVIDIA GPU, and
# onnxruntime's own placement log compared with ortdoctor's shape-only nodes.
#
# Usage, from the repository root:
#   ORTGPU=/path/to/onnxruntime-gpu/--target/dir OUT=/some/dir scripts/model_check_gpu.sh
#
# ORTGPU holds onnxruntime-gpu (1.31.1, as the tests pin) installed with `pip install --no-deps --target`;
# the machine's python3 supplies numpy and the NVIDIA CUDA 13 / cuDNN 9 wheels. Every command and its
# output goes to $OUT/model_check.log; JSON reports go to $OUT/model_json/. What to look for:
#   - no model-cpu-compute-ops warning for the float models (bert_*, gpt2_with_past, cnn): their CPU
#     nodes are shape computations (model-shape-ops-on-cpu, a note);
#   - compare_cpu_nodes.py: "subset": true for every model (onnxruntime's CPU nodes are all shape-only);
#   - run.inputs_valid true, run.agree true, run.speedup, the largest error per output and its bound
#     (float32 with TF32: 1e-2; with --provider-option use_tf32=0: 1e-4);
#   - --iobinding: the same agreement with inputs bound as CUDA OrtValues;
#   - step 4: what binding host memory as CUDA memory does (the Optimum failure), in a child of its own;
#   - step 5: bench/bench_model_check.py's ratio and peak host memory (targets: <= 1.5x, <= 1.3x the
#     model; set BIG_MODEL to a multi-GB fp16 decoder export to measure the case that matters);
#   - step 6: every TensorRT min/opt/max shape set of every fixture runs ("ok").
set -u
ROOT=$(pwd)
OUT=${OUT:?set OUT}
ORTGPU=${ORTGPU:?set ORTGPU}
PY=${PY:-python3}
LOG=$OUT/model_check.log
J=$OUT/model_json
mkdir -p "$J" "$OUT/ort_logs"
export PYTHONUNBUFFERED=1
export PYTHONPATH=$ORTGPU:$ROOT
OD="$PY -m ortdoctor"
MODELS="bert_optimum bert_dynamo bert_optimum_int8_dynamic gpt2_with_past cnn cnn_qdq"
M=$ROOT/tests/data/models

say() { printf '\n=== %s\n' "$*" | tee -a "$LOG"; }
run() {
  printf '$ %s\n' "$*" >>"$LOG"
  bash -c "$*" >>"$LOG" 2>&1
  printf '[exit %s]\n' "$?" >>"$LOG"
}
json() {
  local name=$1; shift
  printf '$ %s > %s.json\n' "$*" "$name" >>"$LOG"
  bash -c "$*" >"$J/$name.json" 2>>"$LOG"
  printf '[exit %s]\n' "$?" >>"$LOG"
}

say "0. The machine"
run "date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv"
run "$PY -c 'import onnxruntime as o, numpy; print(o.__version__, o.__file__, o.get_available_providers(), numpy.__version__)'"

say "1. check --model, no flags (text, then JSON)"
for m in $MODELS; do
  run "$OD check --no-smoke --model $M/$m.onnx"
  json "$m" "$OD check --no-smoke --json --model $M/$m.onnx"
done

say "2. The client's way: --iobinding; and float32 without TF32"
for m in $MODELS; do
  json "$m.iobinding" "$OD check --no-smoke --json --iobinding --model $M/$m.onnx"
  json "$m.no_tf32" "$OD check --no-smoke --json --provider-option use_tf32=0 --model $M/$m.onnx"
done
run "$OD check --no-smoke --iobinding --model $M/bert_optimum.onnx"
for m in bert_optimum gpt2_with_past; do  # the recorded inputs of the fixtures, as --input files
  run "cd $OUT && $PY -c \"import numpy as np; d = np.load('$M/$m.npz'); [np.save('$m.' + k[6:] + '.npy', d[k]) for k in d.files if k.startswith('input:')]\""
  inputs=""
  for f in "$OUT"/$m.*.npy; do n=${f#"$OUT/$m."}; inputs="$inputs --input ${n%.npy}=$f"; done
  json "$m.recorded_inputs" "$OD check --no-smoke --json $inputs --model $M/$m.onnx"
done

say "3. onnxruntime's own placement log against the shape-only nodes"
files=""
for m in $MODELS; do files="$files $M/$m.onnx"; done
run "$PY $ROOT/scripts/compare_cpu_nodes.py --log-dir $OUT/ort_logs $files"

say "4. Host memory bound as CUDA memory (what Optimum did with the tokenizer's CPU tensors)"
run "$PY - <<'EOF'
import numpy as np, onnxruntime as ort
s = ort.InferenceSession('$M/bert_optimum.onnx', providers=['CUDAExecutionProvider'])
host = {i.name: np.ones((1, 16), np.int64) for i in s.get_inputs()}
try:
    b = s.io_binding()
    for name, a in host.items():
        b.bind_input(name, 'cuda', 0, np.int64, list(a.shape), a.ctypes.data)
    b.bind_output('logits', 'cuda', 0)
    s.run_with_iobinding(b)
    print('ran:', b.copy_outputs_to_cpu()[0])
except Exception as exc:
    print(type(exc).__name__, exc)
EOF"

say "5. The cost of the proof: check --model against a hand-written proof (wall time, peak host memory)"
run "$PY $ROOT/bench/bench_model_check.py --make-medium $OUT/medium"
for f in $M/gpt2_with_past.onnx $OUT/medium/medium.onnx ${BIG_MODEL:-}; do  # BIG_MODEL: a multi-GB fp16 decoder
  run "$PY $ROOT/bench/bench_model_check.py --ep cuda --runs 3 --sitedirs $ORTGPU --model $f"
done

say "6. Every advised shape set runs: the TensorRT profile's min/opt/max of each fixture on the CUDA EP"
run "$PY - <<'EOF'
import onnxruntime as ort
from ortdoctor.prove.model_check.inspect import inspect_model
from ortdoctor.prove.model_check.shape_subgraph import propose_inputs
from ortdoctor.prove.model_check.synthetic_feeds import materialise
from ortdoctor.prove.model_check.trt_profile import advise
for m in '$MODELS'.split():
    path = '$M/' + m + '.onnx'
    graph = inspect_model(path).graph
    plan = propose_inputs(graph)
    advice = advise(graph, plan, path)
    s = ort.InferenceSession(path, providers=['CUDAExecutionProvider', 'CPUExecutionProvider'])
    for pick in ('min', 'opt', 'max'):
        shapes = {**{i.name: i.shape for i in plan.inputs}, **{p.name: getattr(p, pick) for p in advice.profiles}}
        try:
            s.run(None, materialise(propose_inputs(graph, shapes=shapes).to_json()))
            print(m, pick, 'ok')
        except Exception as exc:
            print(m, pick, 'FAILED', exc)
EOF"

say "7. The Python summary"
run "$PY - <<'EOF'
import json, glob, os
for path in sorted(glob.glob('$J/*.json')):
    m = json.load(open(path)).get('model') or {}
    run = m.get('run') or {}
    worst = [(o['output'], o.get('relative_error'), (o.get('tolerance') or {}).get('bound')) for o in run.get('outputs', [])]
    print(os.path.basename(path), [f['id'] for f in m.get('findings', [])], 'share', (m.get('placement') or {}).get('gpu_share'),
          'valid', run.get('inputs_valid'), 'agree', run.get('agree'), 'speed-up', run.get('speedup'), worst[:3])
EOF"
echo "done: $LOG"

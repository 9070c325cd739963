#!/usr/bin/env bash
# Run ortdoctor's GPU validation scenarios (docs/validation.md) on a machine with an NVIDIA GPU.
#
# Usage, from the repository root:
#   ORTGPU=/path/to/onnxruntime-gpu/--target/dir OUT=/some/dir scripts/gpu_validation.sh
#
# ORTGPU holds onnxruntime-gpu installed with `pip install --no-deps --target`; the machine's own
# python3 supplies torch, its NVIDIA CUDA 13 wheels and (at first) the CPU onnxruntime. Every
# command's output goes to $OUT/validation.log; JSON reports are collected into $OUT/json.tar.gz.
# The CPU `onnxruntime` package is uninstalled half-way (scenario 2b): run this on a disposable machine.
set -u
ROOT=$(pwd)
OUT=${OUT:?set OUT}
ORTGPU=${ORTGPU:?set ORTGPU}
PY=${PY:-python3}
LOG=$OUT/validation.log
J=$OUT/json
mkdir -p "$J"
export PYTHONUNBUFFERED=1
OD="$PY -m ortdoctor"

say() { printf '\n=== %s\n' "$*" | tee -a "$LOG"; }
# run CMD...: log the command, its combined output and its exit code
run() {
  printf '$ %s\n' "$*" >>"$LOG"
  bash -c "$*" >>"$LOG" 2>&1
  printf '[exit %s]\n' "$?" >>"$LOG"
}
# json NAME CMD...: save stdout as $J/NAME.json, log stderr and the exit code
json() {
  local name=$1; shift
  printf '$ %s > %s.json\n' "$*" "$name" >>"$LOG"
  bash -c "$*" >"$J/$name.json" 2>>"$LOG"
  printf '[exit %s]\n' "$?" >>"$LOG"
}

SITE=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

say "0. The machine"
run "date -u; uname -r; nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv"
run "$PY -V; $PY -m pip list 2>/dev/null | grep -i -E '^(onnx|onnxruntime|torch|nvidia-cud|nvidia-cub|nvidia-cuf|nvidia-cur|nvidia-ml)' "
run "ls $SITE/nvidia/cu13/lib $SITE/nvidia/cudnn/lib | head -40"
run "ldconfig -p | grep -E 'libcudnn.so.9|libcudart.so.13|libcublas.so.13|libcuda.so.1' ; echo LD_LIBRARY_PATH=\$LD_LIBRARY_PATH"
run "sha256sum $ORTGPU/onnxruntime/capi/libonnxruntime_providers_cuda.so; cat $ORTGPU/onnxruntime/capi/build_and_package_info.py"

say "1. As the machine comes: the CPU onnxruntime"
run "PYTHONPATH=$ROOT $OD check"
json s1-check "PYTHONPATH=$ROOT $OD check --json"

say "2a. onnxruntime-gpu on PYTHONPATH beside the CPU package"
run "PYTHONPATH=$ORTGPU:$ROOT $OD check"
json s2a-check "PYTHONPATH=$ORTGPU:$ROOT $OD check --json"

say "2b. The CPU package uninstalled"
run "$PY -m pip uninstall -y onnxruntime"
run "PYTHONPATH=$ORTGPU:$ROOT $OD check"
json s2b-check "PYTHONPATH=$ORTGPU:$ROOT $OD check --json"
run "PYTHONPATH=$ORTGPU:$ROOT $OD check --debug --placement"

say "3. Two copies of CUDA 13 and cuDNN 9: what plain onnxruntime maps, what ortdoctor maps, torch after"
cat >"$OUT/maps.py" <<'EOF'
import os, sys
mode = sys.argv[1]
if mode in ("hook", "hook-then-torch"):
    import ortdoctor.hook  # noqa: F401
elif mode == "torch":
    import torch  # noqa: F401
import numpy as np
import onnxruntime as ort
if mode == "ort-preload":
    ort.preload_dlls(directory="")
from ortdoctor.prove.smoke.model import build_model
s = ort.InferenceSession(build_model().data, providers=["CUDAExecutionProvider"])
x = np.random.default_rng(0).uniform(-1, 1, (256, 256)).astype(np.float32)
s.run(None, {s.get_inputs()[0].name: x})
if mode == "hook-then-torch":
    import torch
    torch.ones(1, device="cuda")  # torch after: its libraries resolve by soname to what is mapped
print("providers:", s.get_providers())
seen = set()
for line in open("/proc/self/maps"):
    p = line.split()[-1] if "/" in line else ""
    if any(k in p for k in ("libcudnn", "libcudart", "libcublas", "libcurand", "libcufft", "libnvrtc")) and p not in seen:
        seen.add(p)
        print("mapped:", p)
EOF
for mode in plain ort-preload hook torch hook-then-torch; do
  run "cd /tmp && PYTHONPATH=$ORTGPU:$ROOT $PY $OUT/maps.py $mode"
done
run "cd /tmp && PYTHONPATH=$ORTGPU:$ROOT $PY -c 'import ortdoctor.hook, torch, onnxruntime; import ortdoctor.formats.procmaps as m; print(\"\\n\".join(sorted(p for p in m.mapped_paths() if \"cudnn\" in p or \"cudart\" in p)))' "

say "4. preload: --directory \"\", the default order, an explicit directory"
json s4-preload-wheels "cd /tmp && PYTHONPATH=$ORTGPU:$ROOT $OD preload --directory '' --json"
run "cd /tmp && PYTHONPATH=$ORTGPU:$ROOT $OD preload --directory ''"
run "cd /tmp && PYTHONPATH=$ORTGPU:$ROOT $OD preload"
json s4-preload-default "cd /tmp && PYTHONPATH=$ORTGPU:$ROOT $OD preload --json"
run "cd /tmp && PYTHONPATH=$ORTGPU:$ROOT $OD preload --directory /usr/local/cuda-13.0/lib64"
json s4-preload-explicit "cd /tmp && PYTHONPATH=$ORTGPU:$ROOT $OD preload --directory /usr/local/cuda-13.0/lib64 --json"
run "cd /tmp && PYTHONPATH=$ORTGPU:$ROOT $OD preload --print-env"

say "5. No GPU visible; a device id that does not exist"
run "CUDA_VISIBLE_DEVICES= PYTHONPATH=$ORTGPU:$ROOT $OD check"
json s5-novis "CUDA_VISIBLE_DEVICES= PYTHONPATH=$ORTGPU:$ROOT $OD check --json"
run "PYTHONPATH=$ORTGPU:$ROOT $OD check --device-id 1"
json s5-dev1 "PYTHONPATH=$ORTGPU:$ROOT $OD check --device-id 1 --json"

say "6. IOBinding and CUDA graphs"
json s6-plain "PYTHONPATH=$ORTGPU:$ROOT $OD check --json --debug"
json s6-iobinding "PYTHONPATH=$ORTGPU:$ROOT $OD check --iobinding --json"
json s6-cudagraph "PYTHONPATH=$ORTGPU:$ROOT $OD check --cuda-graph --json"
run "PYTHONPATH=$ORTGPU:$ROOT $OD check --cuda-graph --debug"
run "PYTHONPATH=$ORTGPU:$ROOT $OD check --provider-option use_tf32=0 --debug"

say "6b. Every device; the per-node placement"
run "PYTHONPATH=$ORTGPU:$ROOT $OD check --all-devices --no-smoke --quiet"
json s6-alldev "PYTHONPATH=$ORTGPU:$ROOT $OD check --all-devices --json"
run "PYTHONPATH=$ORTGPU:$ROOT $OD check --placement"
run "PYTHONPATH=$ORTGPU:$ROOT $OD check --format markdown"

say "6c. The pytest plugin on a working GPU"
mkdir -p /tmp/plug && cat >/tmp/plug/test_gpu.py <<'EOF2'
import pytest
from ortdoctor.prove.smoke.model import build_model

@pytest.mark.requires_cuda_ep
def test_cuda_session(ort_cuda_session):
    sess = ort_cuda_session(build_model().data)
    assert sess.get_providers()[0] == "CUDAExecutionProvider"
EOF2
run "cd /tmp/plug && PYTHONPATH=$ORTGPU:$ROOT $PY -m pytest -p ortdoctor.pytest_plugin --ortdoctor -q -rs test_gpu.py"

say "7. The user's own model (issue 10)"
run "cd /tmp && PYTHONPATH=$ORTGPU:$ROOT $PY $ROOT/scripts/model_check_gpu_demo.py /tmp/models >/tmp/models.json"
for m in float quantized loop shape; do
  run "cd /tmp && PYTHONPATH=$ORTGPU:$ROOT $OD check --model /tmp/models/$m.onnx --no-smoke"
done
run "cd /tmp && PYTHONPATH=$ORTGPU:$ROOT $OD check --model /tmp/models/loop.onnx --cuda-graph --no-smoke --quiet"
run "cd /tmp && PYTHONPATH=$ORTGPU:$ROOT $OD check --model /tmp/models/float.onnx --input-shape X=64x64 --no-smoke --quiet"

say "8. Benchmarks"
run "cd /tmp && PYTHONPATH=$ORTGPU:$ROOT $PY $ROOT/bench/bench_smoke.py --ep CUDAExecutionProvider --repeat 5"
run "cd /tmp && $PY $ROOT/bench/bench_check.py --runs 7 --sitedirs $ORTGPU"
run "cd /tmp && PYTHONPATH=$ORTGPU:$ROOT $PY $ROOT/bench/bench_preload.py --reps 7 --torch --sitedirs $ORTGPU $SITE"

tar -C "$OUT" -czf "$OUT/json.tar.gz" json && rm -rf "$J" "$OUT/maps.py"
echo "done: $LOG"

#!/usr/bin/env bash
# The native-load gate on a real GPU machine: the real CUDA/cuDNN files load through it (every mapping
# proved), a real session runs after the hook, the hook stays quiet under -X dev -W error, and libraries
# planted by another user (NVML, TensorRT) in a world-writable LD_LIBRARY_PATH directory never run.
#
# Usage, from the repository root:
#   ORTGPU=/path/to/onnxruntime-gpu/--target/dir OUT=/some/dir scripts/gpu_gate.sh
#
# ORTGPU holds onnxruntime-gpu installed with `pip install --no-deps --target`; python3 supplies the rest
# (on the H200: torch and its CUDA 13 wheels). Everything goes to $OUT/gate.log.
set -u
ROOT=$(pwd)
OUT=${OUT:?set OUT}
ORTGPU=${ORTGPU:?set ORTGPU}
PY=${PY:-python3}
LOG=$OUT/gate.log
mkdir -p "$OUT"
T=$(mktemp -d); chmod 755 "$T"
export PYTHONUNBUFFERED=1
say() { printf '\n=== %s\n' "$*" | tee -a "$LOG"; }
run() {
  printf '$ %s\n' "$*" >>"$LOG"
  (cd "$T" && bash -c "$*") >>"$LOG" 2>&1
  printf '[exit %s]\n' "$?" >>"$LOG"
}
marker() { if [ -s "$T/MARKER" ]; then echo "MARKER: $(sort -u "$T/MARKER" | tr '\n' ' ')"; else echo "MARKER: none"; fi >>"$LOG"; rm -f "$T/MARKER"; }
plant() {  # plant DIR SONAME: a library whose constructor appends a line to $T/MARKER
  mkdir -p "$1"
  cat >"$1/p.c" <<EOF
#include <stdio.h>
__attribute__((constructor)) static void p(void) { FILE *f = fopen("$T/MARKER", "a"); if (f) { fputs("planted $2 ran\n", f); fclose(f); } }
int getInferLibVersion(void) { return 101601; }
EOF
  gcc -shared -fPIC -Wl,-soname,"$2" -o "$1/$2" "$1/p.c" && rm "$1/p.c"
}
E="PYTHONPATH=$ORTGPU:$ROOT"

say "0. The machine, and the owners and modes on the way to each library directory"
run "git -C $ROOT log -1 --format=%h 2>/dev/null; date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader"
SITE=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
run "namei -l $SITE/nvidia/cu13/lib $SITE/nvidia/cudnn/lib /usr/local/nvidia/lib64 $ORTGPU/onnxruntime/capi"

say "1. check (inspect + smoke session) and preload --json: every mapping proved"
run "$E $PY -m ortdoctor check"
run "$E $PY -m ortdoctor preload --directory '' --json | $PY -c 'import json,sys; r=json.load(sys.stdin); [print(l.get(\"soname\"), l.get(\"path\"), l.get(\"mapped\") or l.get(\"mapped_path\")) for l in r.get(\"loaded\", [])]; print(\"failed:\", r.get(\"failed\")); print(\"findings:\", [f.get(\"id\") for f in r.get(\"findings\", [])])'"
run "$E $PY -m ortdoctor preload"

say "2. The hook, then a real session on the CUDA EP (CPU fallback off), under -X dev -W error"
cat >"$T/session.py" <<'EOF'
import ortdoctor.hook as h
import numpy as np
import onnxruntime as ort
from ortdoctor.prove.smoke.model import build_model
so = ort.SessionOptions()
so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
s = ort.InferenceSession(build_model().data, so, providers=["CUDAExecutionProvider"])
x = np.random.default_rng(0).uniform(-1, 1, (256, 256)).astype(np.float32)
s.run(None, {s.get_inputs()[0].name: x})
print("providers:", s.get_providers())
print("hook loaded:", len(h.result.loaded), "findings:", [f.id for f in h.result.findings])
EOF
run "$E ORTDOCTOR_CACHE=0 $PY -X dev -W error $T/session.py"
run "$E $PY -X dev -W error $T/session.py"
run "$E $PY -X dev -W error $T/session.py"

say "3. Another user's libnvidia-ml.so.1 in a world-writable directory first on LD_LIBRARY_PATH"
plant "$T/ww" libnvidia-ml.so.1; chown -R nobody "$T/ww"; chmod 777 "$T/ww"
run "$E LD_LIBRARY_PATH=$T/ww:\$LD_LIBRARY_PATH $PY -m ortdoctor check --no-smoke | head -12"; marker
run "$E LD_LIBRARY_PATH=$T/ww:\$LD_LIBRARY_PATH $PY -m ortdoctor explain 'libcudnn.so.9: cannot open shared object file' | head -5"; marker

say "4. Another user's TensorRT in a world-writable directory on LD_LIBRARY_PATH"
for so in libnvinfer.so.10 libnvinfer_plugin.so.10 libnvonnxparser.so.10; do plant "$T/trt" $so; done
chown -R nobody "$T/trt"; chmod 777 "$T/trt"
run "$E LD_LIBRARY_PATH=$T/trt:\$LD_LIBRARY_PATH ORTDOCTOR_TENSORRT=1 $PY -c 'import ortdoctor.hook as h; print([f.id for f in h.result.findings])'"; marker
run "$E LD_LIBRARY_PATH=$T/trt:\$LD_LIBRARY_PATH $PY -m ortdoctor preload --tensorrt | tail -8"; marker

say "5. Speed with the gate"
run "PYTHONPATH=$ORTGPU:$ROOT $PY $ROOT/bench/bench_preload.py --reps 11 --sitedirs $ORTGPU $SITE"
run "$PY $ROOT/bench/bench_check.py --runs 15 --sitedirs $ORTGPU"
rm -rf "$T"
echo "done: $LOG"

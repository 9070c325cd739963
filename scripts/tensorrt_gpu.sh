#!/usr/bin/env bash
# Record what ortdoctor says about TensorRT and the TensorRT-RTX plugin EP on a GPU machine (an H200).
#
#   scripts/tensorrt_gpu.sh OUTDIR
#
# Environment:
#   PYTHON          the interpreter with onnxruntime-gpu 1.31.1 and its CUDA 13 wheels importable
#                   (default python3); ortdoctor is taken from this checkout (PYTHONPATH).
#   TENSORRT_SITE   optional: a directory with TensorRT 10 installed, e.g.
#                   pip install --target DIR "tensorrt-cu13==10.*" --extra-index-url https://pypi.nvidia.com
#                   (the -libs package downloads from pypi.nvidia.com: install it where that host is reachable)
#   TENSORRT11_SITE optional: the same with "tensorrt-cu13==11.*" (the unpinned install)
#   TRT_RTX_WHEEL   optional: onnxruntime_ep_nv_tensorrt_rtx_cu13-0.5.0-py3-none-manylinux_2_28_x86_64.whl
#                   (146 MB, sha256 32f575c6...3298)
#
# Every command's output goes to OUTDIR/<name>.txt with the command line first and its exit status last.
# Nothing here needs a network except the reachability probe of pypi.nvidia.com, which is recorded too.
set -u
out=${1:?usage: scripts/tensorrt_gpu.sh OUTDIR}
mkdir -p "$out"
py=${PYTHON:-python3}
repo=$(cd "$(dirname "$0")/.." && pwd)
base_path=${PYTHONPATH:-}

record() {  # record NAME [VAR=VALUE ...] -- COMMAND ...
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  {
    echo "+ ${envs[*]:-} $*"
    env "${envs[@]}" "$@" 2>&1
    echo "rc=$?"
  } > "$out/$name.txt"
}

pp() { echo "$repo${1:+:$1}${base_path:+:$base_path}"; }

# The machine
record nvidia-smi -- nvidia-smi
record python -- "$py" -c 'import sys, onnxruntime as o; print(sys.version); print(o.__version__, o.get_available_providers()); print(o.get_build_info())'

# 1. onnxruntime-gpu 1.31.1 without TensorRT: the CUDA EP, then the TensorRT EP asked for.
record check-cuda PYTHONPATH="$(pp)" -- "$py" -m ortdoctor check
record check-trt PYTHONPATH="$(pp)" -- "$py" -m ortdoctor check --provider tensorrt
record check-trt-json PYTHONPATH="$(pp)" -- "$py" -m ortdoctor check --provider tensorrt --json
record preload-trt PYTHONPATH="$(pp)" -- "$py" -m ortdoctor preload --tensorrt --json

# ORT's own device list, without any plugin.
record ep-devices PYTHONPATH="$(pp)" -- "$py" -c '
import onnxruntime as ort
for d in ort.get_ep_devices():
    hw = d.device
    print(d.ep_name, d.ep_vendor, hw.type, hw.vendor, hex(hw.vendor_id), hex(hw.device_id), dict(hw.metadata))'

# 2. Is NVIDIA's index reachable from here (the tensorrt-cuNN-libs sdists download from it)?
record reach-pypi-nvidia -- curl -sS -m 20 -o /dev/null -w "%{http_code}\n" https://pypi.nvidia.com/

# 3. With TensorRT 10: the session on the TensorRT EP, the engine build against the cached engine.
if [ -n "${TENSORRT_SITE:-}" ]; then
  record check-trt10 PYTHONPATH="$(pp "$TENSORRT_SITE")" -- "$py" -m ortdoctor check --provider tensorrt
  record check-trt10-json PYTHONPATH="$(pp "$TENSORRT_SITE")" -- "$py" -m ortdoctor check --provider tensorrt --json
  record check-trt10-fp16 PYTHONPATH="$(pp "$TENSORRT_SITE")" -- "$py" -m ortdoctor check --provider tensorrt \
    --provider-option trt_fp16_enable=1
  record preload-trt10 PYTHONPATH="$(pp "$TENSORRT_SITE")" -- "$py" -m ortdoctor preload --tensorrt
  record hook-trt10 PYTHONPATH="$(pp "$TENSORRT_SITE")" ORTDOCTOR_TENSORRT=1 ORTDOCTOR_CACHE=0 -- "$py" -c '
import ortdoctor.hook
import onnxruntime as ort
print([(x.name, x.path, x.function_version) for x in ortdoctor.hook.result.loaded if x.name.startswith("nv")])
print(ort.get_available_providers())'
fi

# 4. With TensorRT 11 (what an unpinned pip install gives): the major mismatch, on a real GPU.
if [ -n "${TENSORRT11_SITE:-}" ]; then
  record check-trt11 PYTHONPATH="$(pp "$TENSORRT11_SITE")" -- "$py" -m ortdoctor check --provider tensorrt
fi

# 5. The TensorRT-RTX plugin EP (made for RTX GPUs) on an H200: what registration and get_ep_devices say.
if [ -n "${TRT_RTX_WHEEL:-}" ]; then
  rtx="$out/trt-rtx-site"
  record install-trt-rtx -- "$py" -m pip install --no-deps --no-index --target "$rtx" "$TRT_RTX_WHEEL"
  record check-trt-rtx PYTHONPATH="$(pp "$rtx")" -- "$py" -m ortdoctor check
  record check-trt-rtx-json PYTHONPATH="$(pp "$rtx")" -- "$py" -m ortdoctor check --json
  # The documented use: import the package, register its library, list the devices, run a session.
  record trt-rtx-documented PYTHONPATH="$(pp "$rtx")" -- "$py" -c '
import onnxruntime as ort
import onnxruntime_ep_nv_tensorrt_rtx as trt_ep
ort.register_execution_provider_library(trt_ep.get_ep_name(), trt_ep.get_library_path())
devices = ort.get_ep_devices()
for d in devices:
    print(d.ep_name, d.device.type, d.device.vendor, hex(d.device.vendor_id), hex(d.device.device_id))
mine = [d for d in devices if d.ep_name == trt_ep.get_ep_name()]
print("plugin devices:", len(mine))
with open("/proc/self/maps") as f:
    print(sorted({l.split()[-1] for l in f if "cudart" in l}))
if mine:
    import numpy as np
    from ortdoctor.prove.smoke.model import build_model
    so = ort.SessionOptions()
    so.add_provider_for_devices(mine, {})
    sess = ort.InferenceSession(build_model(64).data, so)
    print(sess.get_providers())
    x = np.ones((64, 64), dtype=np.float32)
    print(sess.run(None, {sess.get_inputs()[0].name: x})[0].sum())'
fi

echo "recorded in $out:"
ls "$out"

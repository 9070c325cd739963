#!/usr/bin/env bash
# Rebuild the small CUDA shared libraries under tests/data/fatbin/ and check each against cuobjdump.
#
# The libraries are committed (CI machines have no nvcc); run this only to change or add one. Needs
# nvcc (CUDA 13.0 built the committed ones) and cuobjdump: from a CUDA toolkit, or from the
# nvidia-cuda-cuobjdump wheel (`pip install nvidia-cuda-cuobjdump`; the binary is
# site-packages/nvidia/cu13/bin/cuobjdump). Point NVCC / CUOBJDUMP at them when not on PATH.
#
# For every library it writes <name>.cuobjdump.txt, cuobjdump's own listing, which tests/test_fatbin.py
# compares with what ortdoctor.formats.fatbin reads; this script makes the same comparison at once.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
out="$here/tests/data/fatbin"
src="$out/kernel.cu"
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
CUOBJDUMP="${CUOBJDUMP:-$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)}"
PYTHON="${PYTHON:-python3}"
for tool in "$NVCC" "$CUOBJDUMP"; do
    [ -x "$tool" ] || { echo "not found: $tool (set NVCC / CUOBJDUMP)" >&2; exit 1; }
done

# -cudart shared keeps each library small (no static runtime inside); -Xfatbin=-compress-all compresses
# even the tiny images, which nvcc would otherwise leave as they are.
build() {
    local name="$1"; shift
    "$NVCC" -shared -Xcompiler -fPIC -cudart shared -o "$out/$name.so" "$src" "$@"
    strip --strip-unneeded "$out/$name.so"
    (cd "$out" && "$CUOBJDUMP" --list-elf --list-ptx "$name.so" 2>/dev/null) > "$out/$name.cuobjdump.txt" || true
    PYTHONPATH="$here" "$PYTHON" - "$out/$name.so" "$out/$name.cuobjdump.txt" <<'EOF'
import collections, re, sys
from ortdoctor.formats.fatbin import read_fatbin
info = read_fatbin(sys.argv[1])
ours = collections.Counter()
for image in info.images:
    # cuobjdump names a family SASS target (sm_100f) by its architecture alone (sm_100)
    name = image.name.removeprefix("compute_").removeprefix("sm_")
    ours[(image.kind, "sm_" + (name[:-1] if image.kind == "sass" and name.endswith("f") else name))] += image.count
theirs = collections.Counter()
for line in open(sys.argv[2]):
    m = re.match(r"(ELF|PTX) file\s+\d+: .*\.(sm_\w+)\.(cubin|ptx)$", line.strip())
    if m:
        theirs[("sass" if m.group(1) == "ELF" else "ptx", m.group(2))] += 1
if ours != theirs:
    sys.exit(f"{sys.argv[1]}: ortdoctor reads {dict(ours)}, cuobjdump lists {dict(theirs)}")
print(f"{sys.argv[1]}: {' '.join(info.sass_archs)} | {' '.join(info.ptx_archs)} -- matches cuobjdump")
EOF
}

# SASS only, uncompressed
build sass_only -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 --no-compress
# PTX only, uncompressed
build ptx_only -gencode arch=compute_80,code=compute_80 --no-compress
# SASS and PTX, compressed with the default (ZSTD) mode
build sass_ptx_zstd -gencode arch=compute_75,code=sm_75 -gencode arch=compute_86,code=[sm_86,compute_86] \
    -Xfatbin=-compress-all
# SASS and PTX, compressed with the "speed" mode (the older, LZ4-like scheme)
build sass_ptx_speed -gencode arch=compute_80,code=[sm_80,compute_80] --compress-mode=speed -Xfatbin=-compress-all
# architecture-specific targets: sm_90a SASS and PTX, sm_120a SASS
build arch_specific -gencode arch=compute_90a,code=[sm_90a,compute_90a] -gencode arch=compute_120a,code=sm_120a \
    --no-compress
# a family target (CUDA 12.9+): sm_100f SASS and PTX
build family -gencode arch=compute_100f,code=[sm_100f,compute_100f] --no-compress

#!/usr/bin/env bash
# Paste the fix `ortdoctor check` prints, as printed, on a GPU machine whose python3 is a venv and whose
# `pip` on PATH belongs to another Python; then check again, with the smoke session. Then the same from
# "both packages installed" with `ortdoctor fix --yes`. Finally the machine is put back as it came
# (the CPU onnxruntime alone).
#
# Usage, from the repository root:
#   WHEELS=/dir OUT=/dir scripts/gpu_fix_paste.sh
#
# WHEELS holds the onnxruntime-gpu wheel the fix asks for and the CPU onnxruntime wheel the machine came
# with; pip runs offline from it (PIP_NO_INDEX, PIP_FIND_LINKS), so a fix that needs anything else (an
# NVIDIA wheel the machine lacks) fails visibly instead of downloading. ortdoctor comes from this
# checkout (PYTHONPATH). Everything goes to $OUT/fix_paste.log.
set -u
ROOT=$(pwd)
OUT=${OUT:?set OUT}
WHEELS=${WHEELS:?set WHEELS}
PY=${PY:-python3}
LOG=$OUT/fix_paste.log
mkdir -p "$OUT"
export PYTHONPATH=$ROOT PIP_NO_INDEX=1 PIP_FIND_LINKS=$WHEELS PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1
OD="$PY -m ortdoctor"

say() { printf '\n=== %s\n' "$*" | tee -a "$LOG"; }
run() {
  printf '$ %s\n' "$*" >>"$LOG"
  bash -c "$*" >>"$LOG" 2>&1
  printf '[exit %s]\n' "$?" >>"$LOG"
}
# The first line of the first error's fix in `check --json`: what a user copies from the text report.
primary_fix() {
  cd /tmp && $OD check --json --no-smoke 2>/dev/null | $PY -c '
import json, sys
report = json.load(sys.stdin)
fixes = [f["fix"] for f in report["findings"] if f["severity"] == "error" and f.get("fix")]
print(fixes[0].splitlines()[0] if fixes else "")'
}
packages() {
  run "$PY -m pip list 2>/dev/null | grep -i -E '^(onnxruntime|nvidia-cu|torch )'"
  run "pip list 2>/dev/null | grep -i -E '^(onnxruntime|nvidia-cu|torch )' || echo 'the other pip: no onnxruntime, CUDA or torch package'"
}

say "0. Which python3, which pip"
run "command -v python3 pip; $PY -c 'import sys; print(sys.executable, sys.prefix)'; pip --version; $PY -m pip --version"
packages

say "1. As the machine comes: the printed fix, pasted as printed"
run "cd /tmp && $OD check"
fix=$(primary_fix)
printf 'primary fix: %s\n' "$fix" >>"$LOG"
if [ -n "$fix" ]; then run "cd /tmp && $fix"; fi
packages
run "cd /tmp && $OD check"
run "cd /tmp && $OD check --json > $OUT/fix_paste_after.json"

say "2. The CPU package installed again on top (a transitive dependency); ortdoctor fix --yes"
run "$PY -m pip install --no-deps --force-reinstall onnxruntime"
run "cd /tmp && $OD check --no-smoke"
run "cd /tmp && $OD fix"
run "cd /tmp && $OD fix --yes"
packages
run "cd /tmp && $OD check"

say "3. Back as the machine came"
run "$PY -m pip uninstall -y onnxruntime-gpu onnxruntime"
run "$PY -m pip install --no-deps onnxruntime"
packages
echo "done: $LOG"

#!/usr/bin/env bash
# The GPU check, for a machine with CUDA (torch 2.11+ already installed there is kept).
# Runs the CUDA path end to end on one scenario and the test suite; writes under $OUT or reports/.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-reports/gpu-check}
mkdir -p "$OUT"
python3 -m pip install -q --no-deps -e . 2>/dev/null || true
export PYTHONUNBUFFERED=1
python3 - <<'PY' 2>&1 | tee "$OUT/env.txt"
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name(0))
PY
python3 -m advisor run print_logging --device cuda --out "$OUT/print_logging" --repeats 10 \
  2>&1 | tee "$OUT/run.log"
python3 -m advisor run item_in_decode_loop --device cuda --out "$OUT/item_in_decode_loop" \
  --repeats 10 2>&1 | tee -a "$OUT/run.log"
python3 -m pytest -q -x 2>&1 | tail -5 | tee "$OUT/tests.log"

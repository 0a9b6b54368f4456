#!/usr/bin/env bash
# The committed example before/after report: a scenario against its fixed variant.
#   bash scripts/example_compare.sh [SCENARIO]      (default: item_in_decode_loop)
# writes reports/examples/SCENARIO-vs-fixed/{before,after,compare}/. It never overwrites: move
# an older example away first. Waits (up to EXAMPLE_MAX_WAIT_S seconds, default 600) for the
# machine to quiet down (1-minute load average below 1.5), because the numbers are measured; if
# it never does, it runs anyway and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
scenario="${1:-item_in_decode_loop}"
out="reports/examples/${scenario}-vs-fixed"
if [ -e "$out" ]; then
    echo "example_compare: $out exists; move it away first (nothing is overwritten)" >&2
    exit 2
fi
.venv/bin/python - <<'PY'
import os, sys, time
deadline = time.monotonic() + float(os.environ.get("EXAMPLE_MAX_WAIT_S", "600"))
while os.getloadavg()[0] >= 1.5 and time.monotonic() < deadline:
    time.sleep(15)
load = os.getloadavg()[0]
if load >= 1.5:
    print(f"example_compare: load average still {load:.2f}; measuring anyway "
          "(the reports record the load at start)", file=sys.stderr)
PY
.venv/bin/advisor run "$scenario" --out "$out/before" --quiet --threads 1
.venv/bin/advisor run "scenarios/${scenario}.py:fixed" --out "$out/after" --quiet --threads 1
.venv/bin/advisor compare "$out/before/report.json" "$out/after/report.json" --out "$out/compare"

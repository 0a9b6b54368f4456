#!/usr/bin/env bash
# Set up (idempotent), lint, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check advisor scenarios tests benchmarks
# two worker processes (pytest-xdist): the suite is compiles and worker processes, one core
# each; ADVISOR_TEST_WORKERS=0 runs it in this one process
.venv/bin/python -m pytest -q -n "${ADVISOR_TEST_WORKERS:-2}" "$@"

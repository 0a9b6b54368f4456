#!/usr/bin/env bash
# Set up (idempotent), lint, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check advisor scenarios tests benchmarks
.venv/bin/python -m pytest -q "$@"

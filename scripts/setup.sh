#!/usr/bin/env bash
# Set up .venv with the torch CPU build and advisor (editable, with dev tools, Ray for
# `advisor sweep --engine ray`, and the model libraries of the zoos the tests run real models
# from: transformers (zoo), the training zoo's and the library zoo's pip libraries).
# torch is installed first and pinned to the CPU build that lies on this machine's disk, so pip
# never resolves an unpinned torch to a multi-GB CUDA build. An existing torch in the supported
# range (2.11-2.13, e.g. on a GPU box) is kept. Override the pin with TORCH_SPEC=... if needed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
if ! .venv/bin/python - <<'PY' 2>/dev/null
import sys
import torch
major, minor = (int(p) for p in torch.__version__.split(".")[:2])
sys.exit(0 if (2, 11) <= (major, minor) < (2, 14) else 1)
PY
then
  .venv/bin/python -m pip install -q --disable-pip-version-check "$TORCH_SPEC"
fi
# The installed torch is a constraint for everything after it, so no extra can replace it.
constraints=$(mktemp)
trap 'rm -f "$constraints"' EXIT
.venv/bin/python -c 'import torch; print(f"torch=={torch.__version__}")' >"$constraints"
.venv/bin/python -m pip install -q --disable-pip-version-check -c "$constraints" \
  -e '.[dev,ray,zoo,trainzoo,libzoo]'

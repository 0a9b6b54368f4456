"""Copy saved measurements of zoo models into this folder, gzipped, for the tests that judge
real third-party models without measuring them (tests/test_zoo_locations.py).

    .venv/bin/python tests/data/zoo/collect.py reports/sweeps/library-zoo

takes the models named in MODELS from a library-zoo sweep folder (benchmarks/libzoo/libzoo.toml)
and writes NAME.measurements.json.gz here.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Library breaks reached through user code (a loop, a lambda, an eval step with a user break of
# its own, a transformers MoE through a lambda), library breaks called directly, and a model
# whose default compile fails.
MODELS = (
    "user_layer_loop",
    "user_lambda_flow",
    "user_eval_step",
    "tm_accuracy",
    "kornia_canny",
    "ode_dopri5",
)


def main(sweep: str) -> int:
    for name in MODELS:
        source = Path(sweep) / name / "measurements.json"
        target = HERE / f"{name}.measurements.json.gz"
        target.write_bytes(gzip.compress(source.read_bytes(), mtime=0))
        print(f"{target.name}: {target.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

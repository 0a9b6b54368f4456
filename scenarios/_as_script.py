"""A built-in scenario as a plain script, the way a user would run it:
`python scenarios/_as_script.py print_logging --steps 50` compiles the scenario's workload with
`torch.compile` (its model in place with `.compile()` for a training step) and calls it in a
loop. `advisor run scenarios/_as_script.py -- print_logging` measures it as a script target;
`TORCH_LOGS=graph_breaks python scenarios/_as_script.py print_logging` lists its breaks.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout, for `scenarios`

from advisor.measure.workload import load_target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("scenario")
    parser.add_argument("--fixed", action="store_true", help="its fixed variant")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--backend", default="inductor", help="torch.compile's backend")
    args = parser.parse_args()
    target = f"scenarios/{args.scenario}.py:fixed" if args.fixed else args.scenario
    workload = load_target(target, "cpu")
    if workload.compiled_module is not None:
        workload.compiled_module.compile(backend=args.backend)
        step = workload.fn
    else:
        step = torch.compile(workload.fn, backend=args.backend)
    for _ in range(args.steps):
        step(*workload.args, **workload.kwargs)
    print(f"{args.scenario}: {args.steps} steps done")


if __name__ == "__main__":
    main()

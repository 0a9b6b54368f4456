"""A small job for `advisor observe`: a compiled step with two graph breaks (a data-dependent
branch at line 15, a print at line 17), called in a loop `--steps` times (default 12), then a
line of its own output. Eager backend: the test checks the files and the report, not speed.

    python tests/targets/scripts/observed_loop.py [--steps N] [--fail-after N]
"""

import argparse

import torch


def step(x: torch.Tensor) -> torch.Tensor:
    y = torch.sin(x) + 1
    if y.sum() > 0:  # data-dependent branch: a break
        y = y * 2
    print("step done")  # a side effect: a break
    return torch.cos(y) - 1


parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=12)
parser.add_argument("--fail-after", type=int, default=-1)
args = parser.parse_args()

compiled = torch.compile(step, backend="eager")
x = torch.ones(16)
for i in range(args.steps):
    if i == args.fail_after:
        raise RuntimeError(f"the job failed at step {i}")
    x = compiled(x)
print(f"observed_loop finished {args.steps} steps")

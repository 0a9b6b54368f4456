"""Flags, an environment variable, DataLoader worker processes, a decorated compiled function
(compiled with the eager backend: tests check the advisor's survey, not Inductor) and an
explicit sys.exit(0) at the end."""

import argparse
import os
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=10)
args = parser.parse_args()
scale = float(os.environ["ADVISOR_TEST_SCALE"])  # a KeyError without it, as the script's own


@torch.compile(backend="eager")
def score(x: torch.Tensor) -> torch.Tensor:
    return (x * scale).softmax(-1).sum(-1)


loader = DataLoader(TensorDataset(torch.randn(64, 16)), batch_size=4, num_workers=2)
seen = 0
for _ in range(args.steps):
    for (batch,) in loader:
        score(batch)
        seen += 1
print(f"scored {seen} batches")
sys.exit(0)

"""A residual MLP classifier with no graph break: the baseline.
Pattern: the feed-forward stack found in every tabular or embedding-head model (LayerNorm,
Linear, GELU, residual), written only in tensor ops, so Dynamo captures the whole forward as one
graph and `fullgraph=True` succeeds. There is nothing to fix: `fixed` returns the same workload.
Use it to see what a clean report looks like and to check the harness finds no break.
"""

from __future__ import annotations

import torch
from torch import nn

from advisor.measure.workload import Workload
from scenarios._common import ResidualBlock, inference, randn, seeded

PATTERN = "no graph break (baseline MLP)"
EXPECTED_VERDICT = "ignore"
EXPECTED_GB_CODE: str | None = None
EXPECTED_LINE: int | None = None

BATCH, IN_FEATURES, HIDDEN, CLASSES, BLOCKS = 16, 128, 256, 16, 3


class MLPClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(IN_FEATURES, HIDDEN)
        self.blocks = nn.ModuleList(ResidualBlock(HIDDEN) for _ in range(BLOCKS))
        self.head = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)
        for block in self.blocks:
            h = block(h)
        return self.head(h).log_softmax(-1)


def workload(device: str) -> Workload:
    gen = seeded(0)
    model = inference(MLPClassifier(), device)
    x = randn(gen, BATCH, IN_FEATURES, device=device)
    return Workload(model, (x,), {}, "clean_mlp")


def fixed(device: str) -> Workload:
    return workload(device)

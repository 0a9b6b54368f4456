"""What the held-out workloads share: the seeded input generator, the inference switch, the
training optimizer and a small MLP builder."""

from __future__ import annotations

import itertools

import torch
from torch import nn

LEARNING_RATE = 1e-3


def inputs(seed: int = 1) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def frozen(*modules: nn.Module) -> None:
    """Inference: eval mode, no autograd graph recorded for the parameters."""
    for module in modules:
        module.eval().requires_grad_(False)


def adamw(module: nn.Module, fused: bool = False) -> torch.optim.AdamW:
    """The training workloads' optimizer: default AdamW (a per-parameter loop on CPU), or the
    fused kernel (`fused=True`, a hand fix)."""
    return torch.optim.AdamW(module.parameters(), lr=LEARNING_RATE, fused=fused or None)


def mlp(*sizes: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)

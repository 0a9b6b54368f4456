"""Two breaks in one user function that pay only together (#59): a data-dependent `if` and a
`.tolist()` kept on the module. Each patch alone leaves the graph split at the other break;
the two applied together (a `combined` patch) give one graph."""

from __future__ import annotations

import torch
from torch import nn


class Masked(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(32, 32)
        self.peaks: list[float] = []

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        y = self.proj(x)
        if not keep.all():
            y = y.masked_fill(~keep[:, None], 0.0)
        self.peaks = y.amax(dim=0).tolist()
        return torch.relu(y)


def workload(device: str) -> tuple[object, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    keep = torch.ones(8, dtype=torch.bool)
    keep[6:] = False
    return Masked().to(device).eval(), (torch.randn(8, 32, device=device), keep.to(device))

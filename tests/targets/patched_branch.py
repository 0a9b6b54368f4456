"""A user function whose data-dependent `if` splits a chain of elementwise work that Inductor
fuses: the generated patch (the `if` as `torch.where`) removes the break and is measured as an
arm of its own. Recorded in tests/data/scenarios/ for the render tests (a report whose break is
fixed by a measured patch, with and without --redact)."""

from __future__ import annotations

import torch


def chain(x: torch.Tensor) -> torch.Tensor:
    y = torch.sin(x) * 1.5 + torch.cos(x) * 0.5
    y = torch.tanh(y) * torch.sigmoid(x)
    if y.mean() > 0:
        y = y + 0.25
    else:
        y = y - 0.25
    y = torch.exp(-y * y) * torch.sin(y) + torch.cos(y * 2.0)
    return torch.sigmoid(y) * torch.tanh(x)


def workload(device: str) -> tuple[object, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return chain, (torch.randn(512, 512, device=device),)

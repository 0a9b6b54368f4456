"""A function that copies a scalar out with `.item()` mid-way and only returns it: the break
splits its tensor work in two; converted at the return, it is one graph and a break at the end."""

from __future__ import annotations

import torch

from advisor.measure.workload import Workload


def summarize(x: torch.Tensor) -> tuple[torch.Tensor, float]:
    scaled = torch.tanh(x * 2.0)
    peak = scaled.abs().amax().item()  # graph-break
    centred = scaled - scaled.mean(dim=-1, keepdim=True)
    return centred.softmax(-1), peak


def factory(device: str) -> Workload:
    x = torch.randn(8, 32, generator=torch.Generator().manual_seed(0)).to(device)
    return Workload(summarize, (x,), name="late_item")


def summarize_fixed(x: torch.Tensor) -> tuple[torch.Tensor, float]:
    """By hand: the scalar read out last, after the tensor work."""
    scaled = torch.tanh(x * 2.0)
    centred = scaled - scaled.mean(dim=-1, keepdim=True)
    return centred.softmax(-1), scaled.abs().amax().item()


def fixed(device: str) -> Workload:
    x = torch.randn(8, 32, generator=torch.Generator().manual_seed(0)).to(device)
    return Workload(summarize_fixed, (x,), name="late_item.fixed")

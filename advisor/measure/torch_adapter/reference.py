"""The fixed torch work the measurement runs beside the user's: the metronome's small eager
model and its input (`advisor.measure.metronome` says what it is for), and the break probe's
input (the probe's functions are `compiler.break_probe_functions`). Wraps torch's tensor and
`nn` constructors; torch is imported inside each function."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def metronome_step(seed: int, batch: int, width: int) -> tuple[Callable[[Any], Any], Any]:
    """(step, input): a few eager layers with weights drawn from `seed`, called under no_grad
    and reduced to a scalar, and a `batch` x `width` input drawn from the same generator."""
    import torch
    from torch import nn

    generator = torch.Generator().manual_seed(seed)
    model = nn.Sequential(
        nn.Linear(width, 2 * width),
        nn.GELU(),
        nn.Linear(2 * width, width),
        nn.LayerNorm(width),
    ).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.1)
    x = torch.randn(batch, width, generator=generator)

    def step(inputs: torch.Tensor) -> Any:
        with torch.no_grad():
            return model(inputs).sum()

    return step, x


def probe_input(device: str) -> Any:
    """The break probe's input: eight ones on `device`."""
    import torch

    return torch.ones(8, device=device)

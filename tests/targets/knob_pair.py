"""An adaptive solver loop that breaks twice per step: on a scalar (`.item()` of the error
estimate scales the step) and on a dynamic shape (`nonzero` picks the components to damp).
Each knob alone leaves the other break, and a break inside the loop makes Dynamo run the whole
frame eagerly; only `capture_scalar_outputs` and `capture_dynamic_output_shape_ops` set
together give one graph. The knob pair is planned and measured as an arm of its own."""

from __future__ import annotations

import torch

STEPS = 8


def rhs(y: torch.Tensor) -> torch.Tensor:
    return torch.tanh(y) * 0.5 - torch.sin(y * 1.3) * 0.25


def solve(y: torch.Tensor) -> torch.Tensor:
    h = 0.05
    for _ in range(STEPS):
        k1 = rhs(y)
        k2 = rhs(y + h * k1)
        y_new = y + h * 0.5 * (k1 + k2)
        error = (k2 - k1).abs().mean()
        scale = error.item()  # the step's error estimate, read as a Python number
        y_new = y_new * (1.0 - 0.01 * scale)
        stiff = torch.nonzero(y_new.abs() > 2.0)  # the components to damp: a dynamic shape
        y = y_new.index_put((stiff[:, 0], stiff[:, 1]), torch.tensor(0.0))
    return torch.sigmoid(y) * torch.cos(y)


def workload(device: str) -> tuple[object, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return solve, (torch.randn(32, 32, device=device) * 1.5,)

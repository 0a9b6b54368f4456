"""Shared pieces of the training scenarios (not a scenario itself): the eager AdamW training step
around a model that is compiled in place. Their residual block is `scenarios._common`'s."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from advisor import Workload

LEARNING_RATE = 1e-3
LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def training_step(
    model: nn.Module, loss_fn: LossFn, optimizer: torch.optim.Optimizer
) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """One optimisation step per call, as a training loop's body writes it."""

    def step(inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step


def module_compiled_training(
    model: nn.Module, loss_fn: LossFn, inputs: torch.Tensor, targets: torch.Tensor, name: str
) -> Workload:
    """The usual placement: `model.compile()` and an eager step around it (zero_grad, forward,
    loss, backward, AdamW step). The model must already be on the inputs' device; each call
    updates the weights, so outputs differ from call to call."""
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    step = training_step(model, loss_fn, optimizer)
    return Workload(step, (inputs, targets), name=name, compiled_module=model)

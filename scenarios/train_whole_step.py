"""The whole training step compiled: backward and the optimizer step inside `torch.compile`.
Pattern: `step = torch.compile(train_step)` where the step does `opt.zero_grad(set_to_none=True)`,
the forward, the loss, `loss.backward()` and `opt.step()` (AdamW), compiling "everything" in one
go. This scenario is about *placement* (where to put `torch.compile`), not a line to rewrite: the
model itself (a residual MLP classifier) has no break. Dynamo cannot trace `Tensor.backward()`
(GB0123): the step's graph ends at `loss.backward()`, which runs in eager, and the rest resumes
in a new frame. `zero_grad` breaks too (GB0008: torch marks `Optimizer.zero_grad` as not to be
traced), and so does `Optimizer.step`, inside torch: two `torch._dynamo.graph_break()` calls in
torch/optim/optimizer.py (GB0025), then the fused AdamW kernel call, which torch disables for
Dynamo (GB0098, and GB7000: the call sits in AdamW.step's loop over parameter groups, so Dynamo
skips that frame). What is compiled is the forward and loss (with its backward, in a compiling
backend) and the returned `detach`, joined by eager glue and skipped frames. The fix is to move
the compile: compile the model in place (here the model and its loss as one module) and run
zero_grad, backward and the optimizer step eagerly around it: one graph, the same compiled
forward and backward, the same eager update, none of the glue. `fixed` is that placement.
The optimizer is `AdamW(fused=True)` (one kernel per parameter group, eager in both variants)
so that the two placements compile the same work. With the default AdamW the update is a
per-parameter Python loop (on CPU) that the whole-step compile does capture, in a graph of its
own after the GB0025 breaks; a rough CPU timing by hand then had the whole-step compile ahead of
the model-only compile, and the sensible placement there also compiles the optimizer step.
"""

from __future__ import annotations

import torch
from torch import nn

from advisor import Workload
from scenarios._common import ResidualBlock, marker_line, randint, randn, seeded
from scenarios._train import LEARNING_RATE

PATTERN = "the whole training step compiled (backward and optimizer inside torch.compile)"
EXPECTED_VERDICT = "isolate"
FIX_KIND = "isolate"  # what `fixed` does: isolate, rewrite or delete
EXPECTED_GB_CODE = "GB0123"
# every root break code of the compiled step: zero_grad and backward in the step, the rest in
# torch (GB0098 chains GB7000: the AdamW.step frame is skipped)
ALL_GB_CODES = ("GB0008", "GB0123", "GB0025", "GB0098")
EXPECTED_LINE = marker_line(__file__)

BATCH, IN_FEATURES, WIDTH, BLOCKS, CLASSES = 32, 64, 128, 6, 10


class MLPClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(IN_FEATURES, WIDTH)
        self.blocks = nn.Sequential(*(ResidualBlock(WIDTH) for _ in range(BLOCKS)))
        self.head = nn.Linear(WIDTH, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.proj(x)))


class ClassifierLoss(nn.Module):
    """The model and its loss as one module, so one compile covers forward and loss."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self.model(x), labels)


def _setup(device: str) -> tuple[nn.Module, torch.optim.Optimizer, torch.Tensor, torch.Tensor]:
    gen = seeded(0)
    model = MLPClassifier().to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, fused=True)
    x = randn(gen, BATCH, IN_FEATURES, device=device)
    labels = randint(gen, CLASSES, BATCH, device=device)
    return model, optimizer, x, labels


def workload(device: str) -> Workload:
    model, optimizer, x, labels = _setup(device)

    def step(x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x), labels)
        loss.backward()  # graph-break
        optimizer.step()
        return loss.detach()

    return Workload(step, (x, labels), name="train_whole_step")


def fixed(device: str) -> Workload:
    model, optimizer, x, labels = _setup(device)
    with_loss = ClassifierLoss(model)

    def step(x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss = with_loss(x, labels)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return Workload(step, (x, labels), name="train_whole_step.fixed", compiled_module=with_loss)

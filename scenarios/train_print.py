"""A debugging `print` left in the forward of a model being trained.
Pattern: `print(f"... {tuple(x.shape)}")` at the top of the forward, added to check the batches
a data loader produces and never removed (or a print to a log file, as in research training
scripts). Here it is a small residual CNN image classifier trained with AdamW, compiled in place
with the step eager around it. Dynamo cannot trace `print` (GB0059 "Failed to trace builtin
operator"): the forward is split at the print, which runs in eager, and resumes in a new graph,
every step (and in a compiled backend the backward is split to match). The fix is to isolate the
side effect: log outside the compiled module, in the eager training step, where it costs nothing
extra (or let Dynamo reorder it with `torch._dynamo.config.reorderable_logging_functions`).
`fixed` moves the print into the step, before the forward.
"""

from __future__ import annotations

import os
from typing import TextIO

import torch
from torch import nn

from advisor import Workload
from scenarios._common import marker_line, randint, randn, seeded
from scenarios._train import LEARNING_RATE, training_step

PATTERN = "print() in a trained model's forward"
EXPECTED_VERDICT = "isolate"
FIX_KIND = "isolate"  # what `fixed` does: isolate, rewrite or delete
EXPECTED_GB_CODE = "GB0059"
EXPECTED_LINE = marker_line(__file__)

BATCH, CHANNELS, SIZE, WIDTH, BLOCKS, CLASSES = 32, 3, 16, 16, 3, 10

# Stands in for the terminal or a log file; kept quiet so benchmarks do not flood the console.
LOG: TextIO = open(os.devnull, "w")


class ConvBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(WIDTH, WIDTH, 3, padding=1)
        self.norm = nn.BatchNorm2d(WIDTH)
        self.conv2 = nn.Conv2d(WIDTH, WIDTH, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv2(nn.functional.relu(self.norm(self.conv1(x))))


class SmallResNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(CHANNELS, WIDTH, 3, padding=1)
        self.blocks = nn.Sequential(*(ConvBlock() for _ in range(BLOCKS)))
        self.head = nn.Linear(WIDTH, CLASSES)

    def classify(self, images: torch.Tensor) -> torch.Tensor:
        h = self.blocks(nn.functional.relu(self.stem(images)))
        return self.head(h.mean(dim=(2, 3)))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        print(f"SmallResNet: batch {tuple(images.shape)} {images.dtype}", file=LOG)  # graph-break
        return self.classify(images)


class SmallResNetFixed(SmallResNet):
    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.classify(images)


def _make(device: str, log_in_step: bool) -> Workload:
    gen = seeded(0)
    model = (SmallResNetFixed if log_in_step else SmallResNet)().to(device).train()
    images = randn(gen, BATCH, CHANNELS, SIZE, SIZE, device=device)
    labels = randint(gen, CLASSES, BATCH, device=device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    step = training_step(model, nn.functional.cross_entropy, optimizer)
    if not log_in_step:
        return Workload(step, (images, labels), name="train_print", compiled_module=model)

    def logged_step(images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        print(f"SmallResNet: batch {tuple(images.shape)} {images.dtype}", file=LOG)
        return step(images, labels)

    return Workload(logged_step, (images, labels), name="train_print.fixed", compiled_module=model)


def workload(device: str) -> Workload:
    return _make(device, log_in_step=False)


def fixed(device: str) -> Workload:
    return _make(device, log_in_step=True)

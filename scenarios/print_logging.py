"""A debugging `print` left in a model's forward.
Pattern: `print(f"... {x.shape}")` (or a print to a log file) in the forward, here through a small
`trace()` helper called after each stage, added while debugging and never removed. It is common
in research code and in models ported from eager PyTorch. Dynamo cannot trace `print` (GB0059
"Failed to trace builtin operator"), so each of the three calls splits the forward, runs the
print in eager and resumes in a new graph, on every call. The fix is to isolate the side effect:
log outside the compiled function (from the returned tensors), or let Dynamo reorder it with
`torch._dynamo.config.reorderable_logging_functions`. `fixed` is the same model with the prints
moved out of the forward.
"""

from __future__ import annotations

import os
from typing import TextIO

import torch
from torch import nn

from advisor.measure.workload import Workload
from scenarios._common import inference, marker_line, randint, seeded

PATTERN = "print() in a model's forward"
EXPECTED_VERDICT = "isolate"
FIX_KIND = "isolate"  # what `fixed` does: isolate, rewrite or delete
EXPECTED_GB_CODE = "GB0059"
EXPECTED_LINE = marker_line(__file__)

BATCH, SEQ, VOCAB, DIM, CLASSES = 4, 16, 2000, 64, 4

# Stands in for the terminal or a log file; kept quiet so benchmarks do not flood the console.
LOG: TextIO = open(os.devnull, "w")


class TextClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.norm = nn.LayerNorm(DIM)
        self.fc1 = nn.Linear(DIM, DIM * 2)
        self.fc2 = nn.Linear(DIM * 2, DIM)
        self.norm2 = nn.LayerNorm(DIM)
        self.fc3 = nn.Linear(DIM, DIM * 2)
        self.fc4 = nn.Linear(DIM * 2, DIM)
        self.head = nn.Linear(DIM, CLASSES)

    def trace(self, t: torch.Tensor) -> None:
        """The debugging helper: one line per stage."""
        print(f"TextClassifier: hidden {tuple(t.shape)} {t.dtype}", file=LOG)  # graph-break

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        h = self.embed(token_ids)
        self.trace(h)
        h = h + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(h))))
        self.trace(h)
        h = h + self.fc4(torch.nn.functional.gelu(self.fc3(self.norm2(h))))
        self.trace(h)
        pooled = h.mean(dim=1)
        return self.head(pooled).softmax(-1)


class TextClassifierFixed(TextClassifier):
    """The same model; the stage logging happens outside the compiled forward."""

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        h = self.embed(token_ids)
        h = h + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(h))))
        h = h + self.fc4(torch.nn.functional.gelu(self.fc3(self.norm2(h))))
        pooled = h.mean(dim=1)
        return self.head(pooled).softmax(-1)


def _make(device: str, log: bool) -> Workload:
    gen = seeded(0)
    model = inference((TextClassifier if log else TextClassifierFixed)(), device)
    ids = randint(gen, VOCAB, BATCH, SEQ, device=device)
    return Workload(model, (ids,), {}, "print_logging" if log else "print_logging.fixed")


def workload(device: str) -> Workload:
    return _make(device, log=True)


def fixed(device: str) -> Workload:
    return _make(device, log=False)

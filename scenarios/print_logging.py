"""A debugging `print` left in a model's forward.
Pattern: `print(f"... {x.shape}")` (or a print to a log file) inside `forward`, added while
debugging and never removed. It is common in research code and in models ported from eager
PyTorch. Dynamo cannot trace `print` (GB0059 "Failed to trace builtin operator"), so it splits
the forward into two graphs and runs the print in eager between them, on every call. The fix is
to isolate the side effect: log outside the compiled function (from the returned tensors), or
let Dynamo reorder it with `torch._dynamo.config.reorderable_logging_functions`. `fixed` is the
same model with the print moved out of the forward.
"""

from __future__ import annotations

import os
from typing import TextIO

import torch
from torch import nn

from advisor.workload import Workload
from scenarios._common import inference, marker_line, randint, seeded

PATTERN = "print() in a model's forward"
EXPECTED_VERDICT = "isolate"
EXPECTED_GB_CODE = "GB0059"
EXPECTED_LINE = marker_line(__file__)

BATCH, SEQ, VOCAB, DIM, CLASSES = 8, 32, 2000, 128, 4

# Stands in for the terminal or a log file; kept quiet so benchmarks do not flood the console.
LOG: TextIO = open(os.devnull, "w")


class TextClassifier(nn.Module):
    def __init__(self, log: bool) -> None:
        super().__init__()
        self.log = log
        self.embed = nn.Embedding(VOCAB, DIM)
        self.norm = nn.LayerNorm(DIM)
        self.fc1 = nn.Linear(DIM, DIM * 2)
        self.fc2 = nn.Linear(DIM * 2, DIM)
        self.head = nn.Linear(DIM, CLASSES)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        h = self.embed(token_ids)
        h = h + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(h))))
        if self.log:
            print(f"TextClassifier: hidden {tuple(h.shape)} {h.dtype}", file=LOG)  # graph-break
        pooled = h.mean(dim=1)
        return self.head(pooled).softmax(-1)


def _make(device: str, log: bool) -> Workload:
    gen = seeded(0)
    model = inference(TextClassifier(log=log), device)
    ids = randint(gen, VOCAB, BATCH, SEQ, device=device)
    return Workload(model, (ids,), {}, "print_logging" if log else "print_logging.fixed")


def workload(device: str) -> Workload:
    return _make(device, log=True)


def fixed(device: str) -> Workload:
    return _make(device, log=False)

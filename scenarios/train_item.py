"""Training a classifier whose forward reads an activation statistic with `.item()` every step.
Pattern: `rms = h.pow(2).mean().sqrt().item()` then `h = h / max(rms, eps)`: the features are
rescaled by their RMS before the head, with the scale read as a Python float so that it carries
no gradient (a "stop-gradient" written the Python way; the same `.item()` shows up in forwards
that keep an activation statistic for a metrics dict or check it for overflow). The model is a
residual MLP trained with AdamW; it is compiled in place and the step runs eagerly around it.
`.item()` moves the value to Python (GB0124, a device sync on a GPU), so Dynamo ends the forward
graph there and resumes in a second one: two forward graphs, and in a compiled backend two
backward graphs, every step. The float reaches the resume function as an argument; its first
compile guards on the value (`___stack0 == 0.78...`), so the second step recompiles it once,
with the float dynamic, and the steps after that reuse it. The fix is a rewrite that keeps the
statistic a tensor: `h / rms.detach().clamp_min(eps)` has the same value and, through
`detach()`, the same gradients. `fixed` does that: one graph, same losses step for step.
"""

from __future__ import annotations

import torch
from torch import nn

from advisor import Workload
from scenarios._common import ResidualBlock, marker_line, randint, randn, seeded
from scenarios._train import module_compiled_training

PATTERN = ".item() on an activation statistic in a trained model's forward"
EXPECTED_VERDICT = "rewrite"
FIX_KIND = "rewrite"  # what `fixed` does: isolate, rewrite or delete
EXPECTED_GB_CODE = "GB0124"
EXPECTED_LINE = marker_line(__file__)
EXPECTED_RECOMPILES = 1  # the resume function, on the second step (the float becomes dynamic)

BATCH, IN_FEATURES, WIDTH, BLOCKS, CLASSES = 32, 64, 128, 6, 10
EPS = 1e-6


class RescaledMLPClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(IN_FEATURES, WIDTH)
        self.blocks = nn.ModuleList(ResidualBlock(WIDTH) for _ in range(BLOCKS))
        self.head = nn.Linear(WIDTH, CLASSES)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)
        for block in self.blocks:
            h = block(h)
        return h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.features(x)
        rms = h.pow(2).mean().sqrt().item()  # graph-break
        return self.head(h / max(rms, EPS))


class RescaledMLPClassifierFixed(RescaledMLPClassifier):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.features(x)
        rms = h.pow(2).mean().sqrt()
        return self.head(h / rms.detach().clamp_min(EPS))


def _make(device: str, tensor_scale: bool) -> Workload:
    gen = seeded(0)
    model_class = RescaledMLPClassifierFixed if tensor_scale else RescaledMLPClassifier
    model = model_class().to(device)
    x = randn(gen, BATCH, IN_FEATURES, device=device)
    y = randint(gen, CLASSES, BATCH, device=device)
    name = "train_item.fixed" if tensor_scale else "train_item"
    return module_compiled_training(model, nn.functional.cross_entropy, x, y, name)


def workload(device: str) -> Workload:
    return _make(device, tensor_scale=False)


def fixed(device: str) -> Workload:
    return _make(device, tensor_scale=True)

"""Setup work inside the hot call (#59): the user's forward calls a library's functional form,
which builds a small module on every call; its constructor's `.item()` breaks the graph in
library code on every call. The fix is the user's: build the module once in `__init__` (the
generated `setup_hoist` patch), after which the call is one graph."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent / "site-packages"))

import setuplib


class Denoiser(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(64, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.tanh(self.proj(x))
        y = setuplib.smooth(y.unsqueeze(1), width=2.0).squeeze(1)
        return torch.sigmoid(y) * x


def workload(device: str) -> tuple[object, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    model = Denoiser().to(device).eval()
    return model, (torch.randn(16, 64, device=device),)

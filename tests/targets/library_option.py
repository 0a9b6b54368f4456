"""A library option (#59): the user's model holds a library module built without an argument
the library then works out from the inputs on every call (`Normalizer(scale=None)`: a
`.item()` in library code breaks the graph each call). The fix is the argument passed where the
user builds the module (the generated `library_option` what-if, measured with the value the
library worked out on these inputs), after which the call is one graph."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent / "site-packages"))

import optionlib


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(32, 32)
        self.norm = optionlib.Normalizer()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.norm(torch.tanh(self.proj(x)))) * 2


class Unscaled(nn.Module):
    """The same argument taken but not kept by the library: nothing to pass."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = optionlib.Unkept()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.norm(x))


def workload(device: str) -> tuple[object, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return Scaled().to(device).eval(), (torch.randn(8, 32, device=device),)


def unkept(device: str) -> tuple[object, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return Unscaled().to(device).eval(), (torch.randn(8, 32, device=device),)

"""Shared helpers for the scenario suite (not a scenario itself), and the residual block of the
MLP and training scenarios."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import nn

BREAK_MARKER = "# graph-break"

F = TypeVar("F", bound=Callable[..., Any])


def marker_line(file: str, marker: str = BREAK_MARKER) -> int:
    """The 1-based line number of the single line in `file` that carries `marker`.

    Scenarios mark the innermost user line where Dynamo breaks with a trailing comment, so
    EXPECTED_LINE follows the code when lines move.
    """
    lines = Path(file).read_text(encoding="utf-8").splitlines()
    hits = [i for i, text in enumerate(lines, start=1) if text.rstrip().endswith(marker)]
    if len(hits) != 1:
        raise RuntimeError(f"{file}: expected exactly one line ending in {marker!r}, found {hits}")
    return hits[0]


def seeded(seed: int = 0) -> torch.Generator:
    """Seed the global RNG (module init) and return a CPU generator for inputs."""
    torch.manual_seed(seed)
    gen = torch.Generator()
    gen.manual_seed(seed + 1)
    return gen


def inference(module: torch.nn.Module, device: str) -> torch.nn.Module:
    """Move to `device`, eval mode, parameters without grad."""
    module = module.to(device).eval()
    for p in module.parameters():
        p.requires_grad_(False)
    return module


class ResidualBlock(nn.Module):
    """Pre-norm feed-forward block: x + fc2(gelu(fc1(norm(x))))."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, dim * 2)
        self.fc2 = nn.Linear(dim * 2, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm(x))))


def randn(gen: torch.Generator, *shape: int, device: str) -> torch.Tensor:
    return torch.randn(*shape, generator=gen).to(device)


def randint(gen: torch.Generator, high: int, *shape: int, device: str) -> torch.Tensor:
    return torch.randint(0, high, shape, generator=gen).to(device)

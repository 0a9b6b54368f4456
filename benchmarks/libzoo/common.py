"""What every module of the library zoo shares: a zoo entry (`LibModel`), a table of entries
that its builders register in, and the zoo's conventions (seeded inputs, frozen modules)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from advisor import Workload

Built = tuple[Workload, Sequence[nn.Module]]  # the workload and the modules it runs (for counts)
Builder = Callable[[str], Built]


@dataclass(frozen=True)
class LibModel:
    """One zoo entry: its library (the pip distribution), what it is, how to build it."""

    library: str  # pip distribution name, e.g. "pyro-ppl"
    family: str  # e.g. "segmentation", "normalizing flow"
    computes: str  # what one call computes, in a few words
    builder: Builder
    user_code: bool = False  # a user-code-around-a-library-model entry (user_code.py)


class Registry(dict[str, LibModel]):
    """Zoo entries by name, in the order they were registered."""

    def register(
        self, name: str, library: str, family: str, computes: str
    ) -> Callable[[Builder], Builder]:
        """A decorator: the builder below is the entry `name`."""

        def add(builder: Builder) -> Builder:
            self[name] = LibModel(library, family, computes, builder)
            return builder

        return add


def parameter_count(modules: Sequence[nn.Module]) -> int:
    seen: set[int] = set()
    total = 0
    for module in modules:
        for p in module.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                total += p.numel()
    return total


def frozen(*modules: nn.Module) -> None:
    """Inference: eval mode, no autograd graph recorded for the parameters."""
    for module in modules:
        module.eval().requires_grad_(False)


def inputs(seed: int = 1) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def image_batch(device: str, batch: int = 2, size: int = 32) -> torch.Tensor:
    return torch.rand(batch, 3, size, size, generator=inputs()).to(device)

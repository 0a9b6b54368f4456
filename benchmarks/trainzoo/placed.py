"""The training zoo's steps with `torch.compile` placed by hand: the independent reference's side
of the training placements (`benchmarks.placements_reference`).

Each factory builds the zoo model `model` and its AdamW step exactly as `models.build` does and
applies one placement the way a user would write it, returning `(step, (inputs, targets))` for
`benchmarks.reference_ab` to run as is (its `@eager` mode: nothing compiled on top). Nothing
here goes through the advisor's measuring; the placements are the plain torch calls:

- `eager`: nothing compiled;
- `module`: `model.compile()` (the model compiled in place, the step eager);
- `optimizer`: `model.compile()` and `opt.step = torch.compile(opt.step)`;
- `fused`: `model.compile()`, the AdamW built with `fused=True`;
- `eager_fused`: nothing compiled, the AdamW built with `fused=True`;
- `step`: `torch.compile(step)` over the plain model (the whole step compiled);
- `split`: `model.compile()` and `opt.step = torch.compile(opt.step)` for a step that was
  compiled whole: the same calls as `optimizer`, named for the form it starts from;
- `allocator_module`, `allocator_step`: the form's own step (`module`, `step`) with glibc's
  malloc told to keep freed memory (`mallopt`, what `MALLOC_MMAP_THRESHOLD_=33554432
  MALLOC_TRIM_THRESHOLD_=1073741824` set at launch): the "allocator" option of each form.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from typing import Any

import torch

from benchmarks.trainzoo.models import LEARNING_RATE, MODELS, training_step

Step = tuple[Callable[..., Any], tuple[Any, ...]]


def _build(device: str, model: str, fused: bool = False) -> tuple[Any, Any, Any, tuple[Any, Any]]:
    """The zoo's model, optimizer and step from its seeds (the same as `models.build`)."""
    if model not in MODELS:
        raise ValueError(f"unknown trainzoo model '{model}' (known: {', '.join(sorted(MODELS))})")
    torch.manual_seed(0)
    case = MODELS[model][1](torch.Generator().manual_seed(1))
    module = case.model.to(device).train()
    inputs = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in case.inputs.items()}
    targets = {k: v.to(device) for k, v in case.targets.items()}
    options = {"fused": True} if fused else {}
    optimizer = torch.optim.AdamW(module.parameters(), lr=LEARNING_RATE, **options)
    return module, optimizer, training_step(module, case.loss, optimizer), (inputs, targets)


def eager(device: str = "cpu", model: str = "gcn") -> Step:
    _, _, step, args = _build(device, model)
    return step, args


def module(device: str = "cpu", model: str = "gcn") -> Step:
    net, _, step, args = _build(device, model)
    net.compile()
    return step, args


def optimizer(device: str = "cpu", model: str = "gcn") -> Step:
    net, opt, step, args = _build(device, model)
    net.compile()
    opt.step = torch.compile(opt.step)  # type: ignore[method-assign]
    return step, args


def fused(device: str = "cpu", model: str = "gcn") -> Step:
    net, _, step, args = _build(device, model, fused=True)
    net.compile()
    return step, args


def eager_fused(device: str = "cpu", model: str = "gcn") -> Step:
    _, _, step, args = _build(device, model, fused=True)
    return step, args


def step(device: str = "cpu", model: str = "gcn") -> Step:
    _, _, whole, args = _build(device, model)
    return torch.compile(whole), args


split = optimizer

# glibc's mallopt parameters (malloc.h) and the values the allocator option sets: allocations up
# to 32 MiB (glibc's largest threshold on 64-bit) from the heap, and the heap not trimmed
# below 1 GiB, so a step's freed activations are reused instead of returned and faulted again.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD, TRIM_THRESHOLD = 32 * 1024 * 1024, 1024 * 1024 * 1024


def keep_freed_memory() -> None:
    """glibc's malloc set to keep freed memory for the rest of this process; an error where the
    C library is not glibc (the option does not apply there)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    if not hasattr(libc, "mallopt"):
        raise RuntimeError("this C library has no mallopt: the allocator option is glibc's")
    settings = ((M_MMAP_THRESHOLD, MMAP_THRESHOLD), (M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    if not all(libc.mallopt(key, value) for key, value in settings):
        raise RuntimeError("mallopt refused the allocator option's settings")


def allocator_module(device: str = "cpu", model: str = "gcn") -> Step:
    keep_freed_memory()
    return module(device, model)


def allocator_step(device: str = "cpu", model: str = "gcn") -> Step:
    keep_freed_memory()
    return step(device, model)

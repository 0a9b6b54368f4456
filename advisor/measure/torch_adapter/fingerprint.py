"""A training step's output reduced to a few floats that can cross a process boundary.

The arms of a training step run in processes of their own, each from a freshly built model, so
whether a compiled variant trains like eager is read by comparing the first steps' outputs
(the loss, usually) between processes. Tensors do not travel well and need not: a small leaf is
kept whole, a large one as its sum, absolute sum and largest magnitude (in float64), which is
enough to see a variant compute something else while staying cheap to send.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from advisor.measure.torch_adapter.compiler import tree_leaves_and_spec

# Leaves with at most this many elements are kept element by element.
WHOLE_LEAF_ELEMENTS = 8


@dataclass(frozen=True)
class LeafPrint:
    """One numeric leaf: its dtype's name, its element count, and either its values (`whole`)
    or (sum, sum of magnitudes, largest magnitude)."""

    dtype: str
    numel: int
    values: tuple[float, ...]
    whole: bool


def output_fingerprint(output: Any) -> tuple[LeafPrint, ...]:
    """The numeric leaves of `output` (tensors, Python numbers), in pytree order; anything else
    (strings, None) is left out."""
    import torch

    leaves, _ = tree_leaves_and_spec(output)
    prints = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            prints.append(_tensor_print(leaf))
        elif isinstance(leaf, (bool, int, float)):
            prints.append(LeafPrint(type(leaf).__name__, 1, (float(leaf),), whole=True))
    return tuple(prints)


def _tensor_print(tensor: Any) -> LeafPrint:
    values = tensor.detach().to("cpu")
    if values.is_complex():
        values = values.abs()
    values = values.double().flatten()
    dtype = str(tensor.dtype).removeprefix("torch.")
    if values.numel() <= WHOLE_LEAF_ELEMENTS:
        return LeafPrint(dtype, values.numel(), tuple(float(v) for v in values), whole=True)
    magnitudes = values.abs()
    finite = magnitudes[magnitudes.isfinite()]
    largest = float(finite.max()) if finite.numel() else math.nan
    summary = (float(values.sum()), float(magnitudes.sum()), largest)
    return LeafPrint(dtype, values.numel(), summary, whole=False)

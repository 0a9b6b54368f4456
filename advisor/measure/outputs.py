"""Whether a compiled variant computes what eager computes: outputs compared leaf by leaf with
dtype-aware tolerances, the largest difference kept."""

from __future__ import annotations

import math
from typing import Any

import torch

from advisor.measure import torch_adapter

# (rtol, atol) per dtype; looser than torch.testing's defaults because compiled kernels fuse and
# reorder floating-point work (the same tolerances PyTorch's dynamo benchmarks use in spirit).
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-4),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float16: (1e-3, 1e-3),
}


def compare_outputs(expected: Any, actual: Any) -> tuple[bool, float | None]:
    """Whether `actual` matches `expected` (nested tensors/containers), and the max abs diff."""
    exp_leaves, exp_spec = torch_adapter.tree_leaves_and_spec(expected)
    act_leaves, act_spec = torch_adapter.tree_leaves_and_spec(actual)
    if exp_spec != act_spec:
        return False, None
    worst: float | None = None
    ok = True
    for exp, act in zip(exp_leaves, act_leaves, strict=True):
        if isinstance(exp, torch.Tensor) and isinstance(act, torch.Tensor):
            if exp.shape != act.shape or exp.dtype != act.dtype:
                return False, None
            if exp.numel() == 0:
                continue
            if exp.dtype.is_floating_point or exp.dtype.is_complex:
                rtol, atol = TOLERANCES.get(exp.dtype, (1e-4, 1e-4))
                diff = (exp.detach().double() - act.detach().double().to(exp.device)).abs()
                limit = atol + rtol * exp.detach().double().abs()
                nan_match = torch.isnan(exp) == torch.isnan(act.to(exp.device))
                ok = (
                    ok
                    and bool(nan_match.all())
                    and bool(((diff <= limit) | torch.isnan(diff)).all())
                )
                finite = diff[~torch.isnan(diff)]
                if finite.numel():
                    worst = max(worst or 0.0, float(finite.max()))
            else:
                ok = ok and bool(torch.equal(exp.cpu(), act.cpu()))
                worst = max(worst or 0.0, 0.0 if torch.equal(exp.cpu(), act.cpu()) else math.inf)
        elif exp != act:
            ok = False
    if worst is not None and math.isinf(worst):
        worst = None
    return ok, worst

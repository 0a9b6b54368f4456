"""Whether a compiled variant computes what eager computes: outputs compared leaf by leaf with
dtype-aware tolerances, the largest difference kept.

Wraps torch's tensor comparison (dtypes, `torch.equal`, NaN and infinity masks) and its pytree
flattening; torch is imported when a comparison or the tolerance table is first asked for."""

from __future__ import annotations

import functools
from typing import Any

from advisor.core.model import OutputCheck
from advisor.measure.torch_adapter.compiler import tree_leaves_and_spec


@functools.cache
def tolerances() -> dict[Any, tuple[float, float]]:
    """(rtol, atol) per torch dtype; looser than torch.testing's defaults because compiled
    kernels fuse and reorder floating-point work (the same tolerances PyTorch's dynamo
    benchmarks use in spirit). A function, not a constant: the keys are torch dtypes, and this
    module imports without torch."""
    import torch

    return {
        torch.float64: (1e-7, 1e-7),
        torch.float32: (1e-4, 1e-4),
        torch.bfloat16: (1.6e-2, 1e-2),
        torch.float16: (1e-3, 1e-3),
    }


@functools.cache
def tolerances_by_dtype_name() -> dict[str, tuple[float, float]]:
    """`tolerances()` by dtype name (`float32`, as a `LeafPrint` spells it), and `float` (a
    Python float from `.item()`) read at float32's."""
    table = tolerances()
    by_name = {str(dtype).removeprefix("torch."): tol for dtype, tol in table.items()}
    by_name["float"] = table[next(d for d in table if str(d) == "torch.float32")]
    return by_name


def compare_outputs(expected: Any, actual: Any) -> OutputCheck:
    """`actual` against `expected` (nested tensors and containers): within the dtype
    tolerances, the largest absolute difference of the floating-point leaves, and whether
    anything but floating-point rounding differs."""
    exp_leaves, exp_spec = tree_leaves_and_spec(expected)
    act_leaves, act_spec = tree_leaves_and_spec(actual)
    if exp_spec != act_spec:
        return OutputCheck(False, None, comparable=False)
    checks = [_leaf(exp, act) for exp, act in zip(exp_leaves, act_leaves, strict=True)]
    diffs = [d for _, d, _ in checks if d is not None]
    return OutputCheck(
        matches=all(ok for ok, _, _ in checks),
        max_abs_diff=max(diffs) if diffs else None,
        comparable=all(same for _, _, same in checks),
    )


def _leaf(exp: Any, act: Any) -> tuple[bool, float | None, bool]:
    """(within tolerance, largest float difference, only rounding differs) for one leaf."""
    import torch

    if not (isinstance(exp, torch.Tensor) and isinstance(act, torch.Tensor)):
        same = bool(exp == act) if not isinstance(exp, torch.Tensor) else False
        return same, None, same
    if exp.shape != act.shape or exp.dtype != act.dtype:
        return False, None, False
    if exp.numel() == 0:
        return True, None, True
    expected, actual = exp.detach(), act.detach().to(exp.device)
    if not (exp.dtype.is_floating_point or exp.dtype.is_complex):
        same = bool(torch.equal(expected.cpu(), actual.cpu()))
        return same, None, same
    rtol, atol = tolerances().get(exp.dtype, (1e-4, 1e-4))
    diff = (expected.double() - actual.double()).abs()
    nan_match = bool((torch.isnan(expected) == torch.isnan(actual)).all())
    within = bool(((diff <= atol + rtol * expected.double().abs()) | torch.isnan(diff)).all())
    finite = diff[torch.isfinite(diff)]
    worst = float(finite.max()) if finite.numel() else None
    inf_match = bool((torch.isinf(expected) == torch.isinf(actual)).all())
    return nan_match and within, worst, nan_match and inf_match

"""Whether a training step's arms train like eager: their first steps compared across processes.

A training step changes the weights on every call, so its output never reproduces and cannot
be checked the way an inference output is. What can be checked is where each arm starts: every
worker builds the model afresh and runs the arm's first two calls on it (`ArmTask.training`),
so the first step's output (the loss, computed before any update) and the second's (after one
update by the arm's backward and optimizer step) should be eager's, up to floating-point
rounding, when the model and data are built from a seed. The parent compares each arm's workers
with eager's first worker here and records the result as the arm's output check, which the
judge reads like any other (`advisor.judge.numerics`: within tolerance, or within a small
multiple of the default mode's own difference). Eager's workers disagreeing among themselves
means the build is not seeded; then nothing is compared, and a note says so.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace

from advisor.core.model import ModeResult, Note, OutputCheck, WhatIf
from advisor.measure.arms import Built
from advisor.measure.torch_adapter import LeafPrint, tolerances_by_dtype_name

Steps = tuple[tuple[LeafPrint, ...], ...]

EAGER_LABEL = "eager"
_EXACT = (0.0, 0.0)  # integers and booleans
_FLOATING = ("float", "bfloat", "complex")  # a floating dtype without its own tolerance: float32's


def arm_checks(builds_by_label: dict[str, list[Built]]) -> tuple[dict[str, OutputCheck], Note]:
    """Each arm's first steps against eager's first worker (eager itself left out), and the
    note that says what was compared; no checks when eager's workers disagree among
    themselves or none reported first steps."""
    eager = [b.first_steps for b in builds_by_label.get(EAGER_LABEL, []) if b.first_steps]
    if not eager:
        return {}, Note("first_steps_not_compared")
    reference = eager[0]
    itself = worst(compare_steps(reference, other) for other in eager[1:])
    if itself is not None and not itself.matches:
        return {}, Note("first_steps_unseeded", values={"processes": float(len(eager))})
    checks = {}
    for label, builds in builds_by_label.items():
        if label == EAGER_LABEL:
            continue
        check = worst(compare_steps(reference, b.first_steps) for b in builds if b.first_steps)
        if check is not None:
            checks[label] = check
    return checks, Note("first_steps_compared", values={"steps": float(len(reference))})


def worst(checks: Iterable[OutputCheck]) -> OutputCheck | None:
    """Several processes' checks as one: every one must match, the largest difference kept."""
    checks = list(checks)
    if not checks:
        return None
    diffs = [c.max_abs_diff for c in checks if c.max_abs_diff is not None]
    return OutputCheck(
        matches=all(c.matches for c in checks),
        max_abs_diff=max(diffs) if diffs else None,
        comparable=all(c.comparable for c in checks),
    )


def compare_steps(expected: Steps, actual: Steps) -> OutputCheck:
    """`actual`'s steps against `expected`'s, leaf by leaf, with the dtype's tolerance."""
    shapes_match = len(expected) == len(actual) and all(
        len(e) == len(a) for e, a in zip(expected, actual, strict=False)
    )
    if not shapes_match:
        return OutputCheck(False, None, comparable=False)
    checks = [
        _leaf(e, a)
        for exp_step, act_step in zip(expected, actual, strict=True)
        for e, a in zip(exp_step, act_step, strict=True)
    ]
    diffs = [d for _, d, _ in checks if d is not None]
    return OutputCheck(
        matches=all(ok for ok, _, _ in checks),
        max_abs_diff=max(diffs) if diffs else None,
        comparable=all(same for _, _, same in checks),
    )


def _leaf(exp: LeafPrint, act: LeafPrint) -> tuple[bool, float | None, bool]:
    """(within tolerance, largest difference, only rounding differs) for one leaf."""
    kind = (exp.dtype, exp.numel, exp.whole, len(exp.values))
    if kind != (act.dtype, act.numel, act.whole, len(act.values)):
        return False, None, False
    floating = exp.dtype.startswith(_FLOATING)
    table = tolerances_by_dtype_name()  # (rtol, atol) by dtype name
    rtol, atol = table.get(exp.dtype, table["float"] if floating else _EXACT)
    ok, same, diffs = True, True, []
    for index, (e, a) in enumerate(zip(exp.values, act.values, strict=True)):
        if math.isnan(e) or math.isnan(a) or math.isinf(e) or math.isinf(a):
            equal = (math.isnan(e) and math.isnan(a)) or e == a
            ok, same = ok and equal, same and equal
            continue
        # a summary's sum and magnitude sum gather `numel` roundings: scale the tolerance
        summed = not exp.whole and index < 2
        magnitude = exp.values[1] if summed else abs(e)
        scale = exp.numel if summed else 1
        diff = abs(e - a)
        diffs.append(diff)
        ok = ok and diff <= atol * scale + rtol * magnitude
    return ok, max(diffs) if diffs else None, same


def with_mode_check(mode: ModeResult, check: OutputCheck | None) -> ModeResult:
    """A compiled mode's record with its first steps' check as its output check."""
    if check is None or mode.status != "ok" or mode.mode == EAGER_LABEL:
        return mode
    return replace(mode, matches_eager=check.matches, max_abs_diff=check.max_abs_diff, output=check)


def with_what_if_check(
    what_if: WhatIf, check: OutputCheck | None, default: OutputCheck | None
) -> WhatIf:
    """A what-if's record with its first steps' check, and the default mode's as its
    baseline's (the numerics judge allows a multiple of the default mode's own difference)."""
    if check is None or what_if.status != "measured":
        return what_if
    return replace(what_if, matches_eager=check.matches, output=check, baseline_output=default)

"""Whether a compiled variant computes what eager computes, judged against the default mode's
own numerics.

Compiled kernels fuse and reorder floating-point work, so a variant can differ from eager by
more than the dtype tolerance while computing the same thing: a float32 sum of log-determinants
did so under default `torch.compile` itself. A variant is accepted when its output is within
the tolerance, or when only rounding can explain the difference (the same structure, shapes,
dtypes, NaN positions and exact values elsewhere) and its largest difference is within a small
multiple of the default mode's own difference from eager. Both numbers stay in the records.
"""

from __future__ import annotations

from advisor.core import policy
from advisor.core.model import ModeResult, OutputCheck, WhatIf

# How much larger than the default mode's own difference from eager a variant's may be.
DEFAULT_DIFF_MULTIPLE = policy.DIFF_MULTIPLE


def accepted(output: OutputCheck | None, reference: OutputCheck | None) -> bool | None:
    """None when there is nothing to judge (eager does not reproduce its own output)."""
    if output is None:
        return None
    if output.matches:
        return True
    if not output.comparable or output.max_abs_diff is None:
        return False
    if reference is None or not reference.comparable or not reference.max_abs_diff:
        return False
    return output.max_abs_diff <= DEFAULT_DIFF_MULTIPLE * reference.max_abs_diff


def mode_output(mode: ModeResult | None) -> OutputCheck | None:
    """A mode's output check (a report from before the checks were kept: its match alone)."""
    if mode is None:
        return None
    if mode.output is not None:
        return mode.output
    if mode.matches_eager is None:
        return None
    return OutputCheck(mode.matches_eager, mode.max_abs_diff, comparable=mode.matches_eager)


def what_if_output(what_if: WhatIf) -> OutputCheck | None:
    if what_if.output is not None:
        return what_if.output
    if what_if.matches_eager is None:
        return None
    return OutputCheck(what_if.matches_eager, comparable=what_if.matches_eager)


def what_if_accepted(what_if: WhatIf, default: ModeResult | None) -> bool | None:
    """A what-if's output against its own baseline's (the same process), else the default
    mode's."""
    reference = what_if.baseline_output or mode_output(default)
    return accepted(what_if_output(what_if), reference)


def mode_accepted(mode: ModeResult | None, default: ModeResult | None) -> bool | None:
    return accepted(mode_output(mode), mode_output(default))

"""Lockstep: data-parallel ranks measuring at once make exactly the same calls in the same order.

A DDP training step all-reduces its gradients: every rank waits in that collective until all
ranks reach it. A rank that calls the workload once more than another (one more timing round,
a block one call longer, one more unprofiled reference) waits forever. The measurement is
adaptive where it runs alone (rounds until a confidence target or a time budget, block sizes
from a timed call, unprofiled references from a time budget); with `Settings.ranks` > 1 every
count is fixed instead:

- timing: exactly `repeats` rounds (no interval target, a budget no run reaches) of one call
  per block (`lockstep_settings`);
- profile: a fixed number of unprofiled reference calls (`unprofiled_calls`);
- decisions taken from what a rank measured (which what-ifs to try, whether the default mode
  is there to profile) are agreed by all ranks first (`agreed`): where they differ, every rank
  skips that stage alike.

The rest already makes a fixed number of calls: the first calls, warm-up, the eager reference,
one call for peak memory, each what-if's compile and warm-up, the placement probes (one call
per module, from the same captured breaks).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from advisor.core.model import Settings
from advisor.measure import torch_adapter

LOCKSTEP_BUDGET_S = 1e9  # a time budget no run reaches: rounds stop at `repeats`
LOCKSTEP_UNPROFILED = 12  # unprofiled reference calls in all (3 per profiler session)


def lockstep(settings: Settings) -> bool:
    return settings.ranks > 1


def lockstep_settings(settings: Settings) -> Settings:
    """The settings a rank measures with: every count fixed (see the module's docstring)."""
    return replace(settings, target_ci=0.0, budget_s=LOCKSTEP_BUDGET_S, min_block_s=0.0)


def unprofiled_calls(settings: Settings, n_calls: int) -> int | None:
    """The unprofiled reference calls a profile takes in lockstep; None: chosen by time."""
    return max(n_calls, LOCKSTEP_UNPROFILED) if lockstep(settings) else None


def agreed(settings: Settings, value: Any) -> bool:
    """Whether every rank holds the same `value` (a collective: every rank must ask, in the
    same order). True outside a process group of more than one rank."""
    if not lockstep(settings):
        return True
    return torch_adapter.ranks_agree(value)

"""Which arms of a replicated run get one more wave: those whose saving is not yet told from
zero and could still lead (`to_settle`). `advisor.measure.replicate` runs the waves; the rule
lives here, apart from the processes, so that `benchmarks/settle_looks.py` can run it on
simulated waves as it is."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import median
from typing import Any, Protocol, TypeVar

from advisor.core import policy, replication
from advisor.measure.arms import is_metronome


class Arm(Protocol):
    """What the rule reads of an arm's record (`replicate.ArmRecord`; named structurally, as
    replicate imports this module)."""

    samples: list[list[float]]  # per wave: ms per call
    failure: Any  # None while the arm is alive
    task: Any  # its `.arm` tells the machine's metronome apart (`arms.is_metronome`)

    @property
    def label(self) -> str: ...


class Limits(Protocol):
    """What the rule reads of the run's plan (`replicate.Plan`)."""

    min_effect: float
    run_spread: float


ArmT = TypeVar("ArmT", bound=Arm)


def to_settle(records: Mapping[str, ArmT], baseline: ArmT, plan: Limits) -> list[ArmT]:
    """The arms whose saving is unsettled and could still be measured ahead of every measured
    one: more waves could change what the report puts first. An arm's own interval (this
    run's waves) reaching past the floor and the leading measured saving is what "could"
    means; one whose interval already ends short of either would not lead whatever more
    waves said. Failed arms, the baseline and the machine's metronome are not candidates."""
    readings = {
        r.label: reading(r, baseline, plan)
        for r in records.values()
        if r.failure is None and r is not baseline and not is_metronome(r.task.arm)
    }
    measured = [found.share for found in filter(None, readings.values()) if found.low > 0]
    best = max(measured, default=-math.inf)
    reach = max(floor(plan), best)  # what its interval must reach to lead
    return [
        records[label]
        for label, found in readings.items()
        if found is not None and found.low <= 0 and found.share > 0 and found.high >= reach
    ]


@dataclass(frozen=True)
class Reading:
    """An arm's saving as a share of the step: the point, the low end of where a rerun would
    put it (the judge's reading: `replication.rerun_interval`) and the high end of this run's
    own interval (how far the waves so far leave room for it to go)."""

    share: float
    low: float
    high: float


def floor(plan: Limits) -> float:
    """The least saving more waves could ever settle: the minimum effect, and the run-level
    spread no wave reduces (1.96 * sqrt(2) * 2.5% = 6.9% of the step at one thread, about 32%
    at torch's default threads here)."""
    return max(plan.min_effect, policy.resolvable_share(plan.run_spread))


def reading(record: Arm, baseline: Arm, plan: Limits) -> Reading | None:
    """The arm's `Reading`, for a run with a minimum effect and waves enough for an interval;
    None for any other."""
    try:
        paired = replication.paired_saving(baseline.samples, record.samples)
    except ValueError:
        return None
    if paired.ci_ms is None or paired.share_ci is None or plan.min_effect <= 0:
        return None
    level = median(replication.wave_medians(baseline.samples).values())
    low, _ = replication.rerun_interval(
        paired.saving_ms, paired.ci_ms, paired.waves, level, plan.run_spread
    )
    return Reading(paired.share, low / level, paired.share_ci[1])

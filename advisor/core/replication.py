"""Statistics of the replicated protocol (no torch): numbers from several worker processes per
arm, the arms of one wave timed round by round.

pyperf's model: a process has state of its own (where its code and data landed in memory, what
its allocator and caches did, how Inductor's compile of that process went) that interleaving
inside the process cannot cancel, so values come from several processes and the interval from
the spread between them. Here an arm's number is the median of its processes' medians, with a
95% t-interval over them; a saving pairs each wave's variant process with the default mode's
process of the same wave (timed in the same rounds, so the machine's drift cancels) and takes
the t-interval of the per-wave savings. With P processes the interval has P - 1 degrees of
freedom: few processes give a wide interval, which is what a rerun would show.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from advisor.core import policy

DISAGREE_SPREAD = policy.DISAGREE_SPREAD


def process_target(target_ci: float, run_spread: float) -> float:
    """How close a process's median must be (its 95% interval, a share of it) before its wave
    stops timing: `target_ci`, but never finer than the run-level spread that no timing inside
    a process removes (`run_spread`, one standard deviation; 1.96 of them at 95%). A finer
    median buys nothing a rerun would keep, and would time every wave of a noisy machine to its
    budget (measured here: the replicated end-to-end test 71 s at ±2%, 54 s so, 41 s before the
    rounds went past `--repeats`). 0 (no target) stays 0."""
    if target_ci <= 0:
        return 0.0
    return max(target_ci, 1.96 * run_spread)


def median(values: Sequence[float]) -> float:
    return float(np.median(np.asarray(values, dtype=float)))


def t_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """A t-interval of the mean of `values` (None with fewer than two)."""
    from scipy.stats import t

    n = len(values)
    if n < 2:
        return None
    data = np.asarray(values, dtype=float)
    centre = float(data.mean())
    half = float(t.ppf((1 + confidence) / 2, n - 1)) * float(data.std(ddof=1)) / math.sqrt(n)
    return centre - half, centre + half


def process_medians(per_process: Sequence[Sequence[float]]) -> list[float]:
    return [median(p) for p in per_process if len(p)]


def arm_median(per_process: Sequence[Sequence[float]]) -> float:
    """The median of the processes' medians."""
    medians = process_medians(per_process)
    if not medians:
        raise ValueError("an arm with no timed process")
    return median(medians)


def arm_interval(per_process: Sequence[Sequence[float]]) -> tuple[float, float] | None:
    """95% interval of the arm's level across processes."""
    return t_interval(process_medians(per_process))


def spread(values: Sequence[float]) -> float:
    """Range over median: how far apart the processes are."""
    if len(values) < 2:
        return 0.0
    centre = median(values)
    return (max(values) - min(values)) / centre if centre > 0 else math.inf


@dataclass(frozen=True)
class PairedSaving:
    """baseline - variant per call, from the waves where both were timed."""

    saving_ms: float
    ci_ms: tuple[float, float] | None
    share: float  # of the baseline's median
    share_ci: tuple[float, float] | None
    per_wave_ms: tuple[float, ...]  # each wave's saving, in the baseline's overall frame
    waves: int


def wave_medians(per_wave: Sequence[Sequence[float]]) -> dict[int, float]:
    """Each timed wave's median, by wave index."""
    return {i: median(p) for i, p in enumerate(per_wave) if len(p)}


def wave_shares(
    baseline: Sequence[Sequence[float]], variant: Sequence[Sequence[float]]
) -> list[float]:
    """1 - median(variant) / median(baseline), wave by wave (waves missing either are left
    out): a share, so that a wave on a slower stretch of the machine counts like the others."""
    return shares_of(wave_medians(baseline), wave_medians(variant))


def shares_of(baseline: dict[int, float], variant: dict[int, float]) -> list[float]:
    """The per-wave shares from wave medians (the waves both have)."""
    waves = sorted(set(baseline) & set(variant))
    return [1.0 - variant[w] / baseline[w] for w in waves if baseline[w] > 0]


def paired_saving(
    baseline: Sequence[Sequence[float]], variant: Sequence[Sequence[float]]
) -> PairedSaving:
    """The variant's saving against the baseline timed in the same waves: the mean per-wave
    share (with its t-interval) times the baseline arm's median."""
    return paired_from_medians(wave_medians(baseline), wave_medians(variant))


def paired_from_medians(baseline: dict[int, float], variant: dict[int, float]) -> PairedSaving:
    """`paired_saving` from wave medians alone (what a saved record keeps)."""
    shares = shares_of(baseline, variant)
    if not shares:
        raise ValueError("no wave timed both the baseline and the variant")
    level = median(list(baseline.values()))
    share = float(np.mean(shares))
    share_ci = t_interval(shares)
    ci = (share_ci[0] * level, share_ci[1] * level) if share_ci is not None else None
    return PairedSaving(
        saving_ms=share * level,
        ci_ms=ci,
        share=share,
        share_ci=share_ci,
        per_wave_ms=tuple(s * level for s in shares),
        waves=len(shares),
    )


def relative_levels(
    arm: Sequence[Sequence[float]], reference: Sequence[Sequence[float]] | None
) -> list[float]:
    """The arm's process medians, each over the reference's in the same wave where there is
    one (the drift between waves cancels): what the disagreement check reads."""
    if reference is None:
        return process_medians(arm)
    return [1.0 - s for s in wave_shares(reference, arm)]


def disagrees(
    arm: Sequence[Sequence[float]],
    reference: Sequence[Sequence[float]] | None,
    limit: float = DISAGREE_SPREAD,
) -> bool:
    """Whether the arm's processes are further apart than the noise model allows."""
    return spread(relative_levels(arm, reference)) > limit


def measurable(
    saving_ms: float | None, ci_ms: tuple[float, float] | None, min_effect_ms: float
) -> bool:
    """A saving counts as measured when its 95% interval lies above zero and it reaches the
    minimum effect (`Settings.min_effect` of the step, in ms); otherwise it is "no measurable
    effect"."""
    if saving_ms is None or ci_ms is None:
        return False
    return ci_ms[0] > 0 and saving_ms >= min_effect_ms


def rerun_interval(
    saving_ms: float,
    ci_ms: tuple[float, float],
    waves: int | None,
    level_ms: float,
    run_spread: float,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Where a rerun of the same measurement would put the saving: the interval of one run's
    waves (`ci_ms`, a t-interval on `waves` - 1 degrees of freedom, or a normal one where
    `waves` is None) widened for a second run's own error and for the run-level spread that
    no wave of either shows (`run_spread`, a share of `level_ms`, measured from reruns here:
    `policy.saving_spread`). Each side is widened apart (a bootstrap interval can be lopsided).
    Two runs each carry their waves' error and the run-level spread: the variance is twice
    their sum; the run-level part is known, so the degrees of freedom are the waves' alone
    (Welch-Satterthwaite)."""
    from scipy.stats import norm, t

    run = (run_spread * level_ms) ** 2
    level = (1 + confidence) / 2
    q = float(t.ppf(level, waves - 1)) if waves and waves > 1 else float(norm.ppf(level))
    bounds = []
    for side, bound in ((-1, ci_ms[0]), (1, ci_ms[1])):
        sampled = 2 * (abs(bound - saving_ms) / q) ** 2
        total = sampled + 2 * run
        if waves and waves > 1 and sampled > 0:
            dof = total**2 / (sampled**2 / (waves - 1))
        else:
            dof = math.inf
        quantile = float(t.ppf(level, dof))
        bounds.append(saving_ms + side * quantile * math.sqrt(total))
    return bounds[0], bounds[1]


@dataclass(frozen=True)
class RunRatio:
    """after / before of two replicated arms (two runs), from their process medians."""

    ratio: float  # of the arms' medians
    ci: tuple[float, float]  # 95%: Welch's t-interval of the difference of mean log medians
    p_value: float  # Welch's t-test of the log medians


def run_ratio(
    before: Sequence[float],
    after: Sequence[float],
    confidence: float = 0.95,
    run_spread: float = 0.0,
) -> RunRatio | None:
    """Two runs' arm compared process by process: each process's level is one value, so the
    interval holds the spread between processes that the blocks of one process cannot show. On
    logs, so that the interval is a ratio's. `run_spread` is the standard deviation (on the log
    scale) of a whole run's level that no process of it shows, a run-level noise measured on
    this machine (`policy.RUN_SPREAD`): each run's mean carries it once. None with fewer than
    two processes on a side, or a level that is not positive."""
    from scipy.stats import t

    if len(before) < 2 or len(after) < 2 or min(*before, *after) <= 0:
        return None
    lb, la = np.log(np.asarray(before, dtype=float)), np.log(np.asarray(after, dtype=float))
    vb, va = lb.var(ddof=1) / len(lb), la.var(ddof=1) / len(la)
    runs = 2 * run_spread**2
    diff = float(la.mean() - lb.mean())
    se = math.sqrt(vb + va + runs)
    if se == 0:
        return RunRatio(median(after) / median(before), (math.exp(diff),) * 2, 0.0)
    # Welch-Satterthwaite degrees of freedom; the run-level part is a known variance (no
    # degrees of freedom spent on it)
    sampled = vb**2 / (len(lb) - 1) + va**2 / (len(la) - 1)
    dof = (vb + va + runs) ** 2 / sampled if sampled > 0 else math.inf
    quantile = float(t.ppf((1 + confidence) / 2, dof))
    p = float(2 * t.sf(abs(diff) / se, dof))
    ratio = median(after) / median(before)
    return RunRatio(ratio, (math.exp(diff - quantile * se), math.exp(diff + quantile * se)), p)


def over_reference(
    samples: Sequence[float], rounds: Sequence[int], reference: dict[int, float]
) -> float | None:
    """The median of each block over the reference's block of the same round (rounds are
    timed one right after the other, so the machine's speed at that moment cancels); None when
    no round has both."""
    ratios = [s / reference[r] for s, r in zip(samples, rounds, strict=True) if reference.get(r)]
    return median(ratios) if ratios else None

"""Statistics used by the harness, the cost model and the comparisons (numpy and scipy).

One median (numpy's), one IQR, intervals from scipy: a distribution-free interval for a median
from binomial order statistics, bootstrap intervals for differences and ratios of medians, and
Mann-Whitney U (exact for small samples without ties).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from advisor.core.model import LatencyStats

# Timed samples are split into this many consecutive epochs to see drift within a run: four
# chunks keep at least five samples each at the default 20 rounds, and the range of four values
# is about two standard deviations of them (see `advisor.gate.compare`).
EPOCHS = 4


def median(values: Sequence[float]) -> float:
    if len(values) == 0:
        raise ValueError("median of an empty sequence")
    return float(np.median(np.asarray(values, dtype=float)))


def iqr(values: Sequence[float]) -> float:
    if len(values) == 0:
        raise ValueError("IQR of an empty sequence")
    q1, q3 = np.quantile(np.asarray(values, dtype=float), [0.25, 0.75])
    return float(q3 - q1)


def latency_stats(
    samples_s: Sequence[float], calls_per_sample: int, target_ci: float | None = None
) -> LatencyStats:
    """Summarise per-call latency samples given in seconds (in the order they were timed).

    With a `target_ci` (a fraction of the median), `target_met` says whether the median's 95%
    interval lies within that fraction of the median on both sides."""
    samples_ms = tuple(float(s) * 1e3 for s in samples_s)
    low, high = median_ci(samples_ms)
    return LatencyStats(
        median_ms=median(samples_ms),
        iqr_ms=iqr(samples_ms),
        n=len(samples_ms),
        samples_ms=samples_ms,
        min_ms=min(samples_ms),
        max_ms=max(samples_ms),
        calls_per_sample=calls_per_sample,
        ci_ms=(low, high),
        target_met=None if target_ci is None else relative_half_width(samples_ms) <= target_ci,
    )


def median_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the median: the order statistics whose ranks a
    Binomial(n, 1/2) puts around the middle with at least `confidence` coverage. With fewer than
    6 samples no such interval exists at 95%: the sample range is returned."""
    from scipy.stats import binom

    ordered = np.sort(np.asarray(values, dtype=float))
    n = ordered.size
    if n == 0:
        raise ValueError("interval of an empty sequence")
    # [x_(k), x_(n-k+1)] (1-based ranks) covers the median with 1 - 2 P(B <= k - 1)
    k = int(binom.ppf((1 - confidence) / 2, n, 0.5))
    if k < 1 or n - k < k:
        return float(ordered[0]), float(ordered[-1])
    return float(ordered[k - 1]), float(ordered[n - k])


def relative_half_width(values: Sequence[float], confidence: float = 0.95) -> float:
    """How far the median's interval reaches from the median, as a fraction of the median (the
    larger side: order-statistic intervals are not symmetric)."""
    centre = median(values)
    if centre <= 0:
        return math.inf
    low, high = median_ci(values, confidence)
    return max(centre - low, high - centre) / centre


def epoch_medians(values: Sequence[float], epochs: int = EPOCHS) -> list[float]:
    """Medians of `epochs` consecutive, nearly equal chunks of samples kept in timing order."""
    chunks = np.array_split(np.asarray(values, dtype=float), min(epochs, len(values)))
    return [float(np.median(c)) for c in chunks if c.size]


def drift(values: Sequence[float], epochs: int = EPOCHS) -> float | None:
    """The range of the epoch medians as a fraction of the median: how far the median of a
    stretch of this run moved while it was timed. None with fewer samples than epochs."""
    if len(values) < epochs:
        return None
    meds = epoch_medians(values, epochs)
    centre = median(values)
    return (max(meds) - min(meds)) / centre if centre > 0 else None


def median_noise(values: Sequence[float], confidence: float = 0.95) -> float:
    """Half the width of the median's interval: what a change must beat to be told from noise."""
    if len(values) < 2:
        return 0.0
    low, high = median_ci(values, confidence)
    return (high - low) / 2


def _bootstrap(
    samples: Sequence[Sequence[float]],
    statistic: Callable[..., np.ndarray],
    confidence: float,
    seed: int,
) -> tuple[float, float]:
    """A percentile bootstrap interval of `statistic` of the samples (each resampled on its
    own), seeded so that a run's interval is the same each time."""
    from scipy.stats import bootstrap

    # Degenerate samples (all equal, zero medians) give an infinite or undefined interval,
    # which the callers read as "not significant"; scipy's warnings about it are noise here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = bootstrap(
            tuple(np.asarray(sample, dtype=float) for sample in samples),
            statistic,
            confidence_level=confidence,
            n_resamples=2000,
            method="percentile",
            vectorized=True,
            rng=np.random.default_rng(seed),
        )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _median_difference(b: np.ndarray, a: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(b, axis=axis) - np.median(a, axis=axis)


def _median_ratio(b: np.ndarray, a: np.ndarray, axis: int = -1) -> np.ndarray:
    # a resample of tiny or zero timings can have a zero median: inf, not a warning
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return np.median(a, axis=axis) / np.median(b, axis=axis)


def median_difference_ci(
    before: Sequence[float], after: Sequence[float], confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """median(before) - median(after), with a bootstrap interval of that difference."""
    low, high = _bootstrap((before, after), _median_difference, confidence, seed)
    return median(before) - median(after), low, high


def median_ratio_ci(
    before: Sequence[float], after: Sequence[float], confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """median(after) / median(before) (below 1 is faster), with a bootstrap interval."""
    low, high = _bootstrap((before, after), _median_ratio, confidence, seed)
    return median(after) / median(before), low, high


def mann_whitney_p(before: Sequence[float], after: Sequence[float]) -> float:
    """Two-sided Mann-Whitney U p-value; exact for small samples without ties."""
    from scipy.stats import mannwhitneyu

    return float(mannwhitneyu(before, after, alternative="two-sided", method="auto").pvalue)


def _relative_ratio(
    before: np.ndarray,
    before_ref: np.ndarray,
    after: np.ndarray,
    after_ref: np.ndarray,
    axis: int = -1,
) -> np.ndarray:
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        after_rel = np.median(after, axis=axis) / np.median(after_ref, axis=axis)
        before_rel = np.median(before, axis=axis) / np.median(before_ref, axis=axis)
        return after_rel / before_rel


def relative_ratio_ci(
    before: Sequence[float],
    before_ref: Sequence[float],
    after: Sequence[float],
    after_ref: Sequence[float],
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(median(after) / median(after_ref)) / (median(before) / median(before_ref)): a change
    measured against a reference timed alongside it in each run (below 1 is faster), so a
    drift of the machine that moves both alike cancels; with a bootstrap interval."""
    samples = (before, before_ref, after, after_ref)
    low, high = _bootstrap(samples, _relative_ratio, confidence, seed)
    point = (median(after) / median(after_ref)) / (median(before) / median(before_ref))
    return point, low, high

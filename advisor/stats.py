"""Small, dependency-free statistics used by the harness and the comparisons."""

from __future__ import annotations

import math
from collections.abc import Sequence

from advisor.model import LatencyStats


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default method) of a non-empty sequence."""
    if not values:
        raise ValueError("quantile of an empty sequence")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = math.floor(pos)
    hi = math.ceil(pos)
    if lo == hi:
        return ordered[lo]
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float:
    return quantile(values, 0.5)


def iqr(values: Sequence[float]) -> float:
    return quantile(values, 0.75) - quantile(values, 0.25)


def latency_stats(samples_s: Sequence[float], calls_per_sample: int) -> LatencyStats:
    """Summarise per-call latency samples given in seconds."""
    samples_ms = tuple(s * 1e3 for s in samples_s)
    return LatencyStats(
        median_ms=median(samples_ms),
        iqr_ms=iqr(samples_ms),
        n=len(samples_ms),
        samples_ms=samples_ms,
        min_ms=min(samples_ms),
        max_ms=max(samples_ms),
        calls_per_sample=calls_per_sample,
    )


def median_difference_ci(
    before: Sequence[float],
    after: Sequence[float],
    alpha: float = 0.05,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """median(before) - median(after), with a bootstrap (1 - alpha) interval of that difference."""
    import numpy as np

    rng = np.random.default_rng(seed)
    b = np.asarray(before, dtype=float)
    a = np.asarray(after, dtype=float)
    boot = np.median(rng.choice(b, size=(resamples, b.size)), axis=1) - np.median(
        rng.choice(a, size=(resamples, a.size)), axis=1
    )
    low, high = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    return float(np.median(b) - np.median(a)), float(low), float(high)

"""Before/after comparison of two reports, with honest significance.

For each mode measured in both runs: the medians, their ratio with a bootstrap 95% confidence
interval (resampling the raw samples of each run), and a two-sided Mann-Whitney U test. A change
is called significant only when p < alpha AND the interval excludes 1. Breaks are matched by
registry code and user source line (file name + line), so a report says which breaks a change
removed, added or kept. Differences in environment (torch, device) are flagged: a comparison
across machines measures the machines too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from advisor.model import Report, WorkloadInfo

COMPARE_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class ModeDelta:
    mode: str
    before_ms: float | None
    after_ms: float | None
    ratio: float | None = None  # after / before (below 1 is faster)
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    significant: bool = False
    verdict: str = "n/a"  # "faster", "slower", "no significant change", "n/a"
    before_n: int = 0
    after_n: int = 0


@dataclass(frozen=True)
class BreakDelta:
    key: str
    gb_code: str | None
    location: str
    status: str  # "removed", "added", "kept"
    before_cost_ms: float | None = None
    after_cost_ms: float | None = None


@dataclass(frozen=True)
class Comparison:
    before: WorkloadInfo
    after: WorkloadInfo
    modes: tuple[ModeDelta, ...]
    breaks: tuple[BreakDelta, ...]
    warnings: tuple[str, ...] = ()
    alpha: float = 0.05
    schema_version: int = COMPARE_SCHEMA_VERSION


def compare_reports(
    before: Report, after: Report, alpha: float = 0.05, resamples: int = 2000, seed: int = 0
) -> Comparison:
    rng = np.random.default_rng(seed)
    warnings: list[str] = []
    for label, b, a in (
        ("torch", before.environment.torch, after.environment.torch),
        ("device", before.environment.device_name, after.environment.device_name),
        ("threads", before.environment.cpu_threads, after.environment.cpu_threads),
    ):
        if b != a:
            warnings.append(f"{label} differs ({b} vs {a}): the comparison measures that too")
    modes = []
    for name in ("eager", "default", "fullgraph"):
        mb, ma = before.mode(name), after.mode(name)
        if mb is None and ma is None:
            continue
        modes.append(
            _mode_delta(
                name, mb.latency if mb else None, ma.latency if ma else None, alpha, resamples, rng
            )
        )
    small = [d.mode for d in modes if 0 < min(d.before_n, d.after_n) < 8]
    if small:
        warnings.append(f"few samples for {', '.join(small)}: significance tests are weak below 8")
    return Comparison(
        before.workload,
        after.workload,
        tuple(modes),
        _break_deltas(before, after),
        tuple(warnings),
        alpha,
    )


def _mode_delta(name, before, after, alpha, resamples, rng) -> ModeDelta:  # type: ignore[no-untyped-def]
    if before is None or after is None or not before.samples_ms or not after.samples_ms:
        return ModeDelta(
            name,
            before.median_ms if before else None,
            after.median_ms if after else None,
            before_n=before.n if before else 0,
            after_n=after.n if after else 0,
        )
    b = np.asarray(before.samples_ms, dtype=float)
    a = np.asarray(after.samples_ms, dtype=float)
    ratio = float(np.median(a) / np.median(b))
    boot_b = np.median(rng.choice(b, size=(resamples, b.size), replace=True), axis=1)
    boot_a = np.median(rng.choice(a, size=(resamples, a.size), replace=True), axis=1)
    ratios = boot_a / boot_b
    low, high = (float(v) for v in np.quantile(ratios, [alpha / 2, 1 - alpha / 2]))
    p = mann_whitney_p(b, a)
    significant = p < alpha and (high < 1.0 or low > 1.0)
    verdict = ("faster" if ratio < 1 else "slower") if significant else "no significant change"
    return ModeDelta(
        name,
        float(np.median(b)),
        float(np.median(a)),
        ratio,
        low,
        high,
        p,
        significant,
        verdict,
        int(b.size),
        int(a.size),
    )


def mann_whitney_p(x: np.ndarray, y: np.ndarray) -> float:
    """Two-sided Mann-Whitney U p-value (normal approximation with tie correction)."""
    n1, n2 = x.size, y.size
    combined = np.concatenate([x, y])
    order = combined.argsort(kind="mergesort")
    ranks = np.empty(combined.size, dtype=float)
    sorted_vals = combined[order]
    i = 0
    while i < combined.size:  # average ranks over ties
        j = i
        while j + 1 < combined.size and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    u1 = ranks[:n1].sum() - n1 * (n1 + 1) / 2
    mean_u = n1 * n2 / 2
    _, counts = np.unique(combined, return_counts=True)
    n = n1 + n2
    tie_term = float(((counts**3) - counts).sum()) / (n * (n - 1)) if n > 1 else 0.0
    var_u = n1 * n2 / 12 * ((n + 1) - tie_term)
    if var_u <= 0:
        return 1.0
    z = (abs(u1 - mean_u) - 0.5) / math.sqrt(var_u)  # continuity correction
    return float(math.erfc(max(z, 0.0) / math.sqrt(2)))


def _break_key(gb_code: str | None, gb_type: str, file: str, line: int) -> str:
    return f"{gb_code or gb_type} @ {Path(file).name}:{line}"


def _break_deltas(before: Report, after: Report) -> tuple[BreakDelta, ...]:
    b = {_break_key(x.gb_code, x.gb_type, x.file, x.line): x for x in before.breaks}
    a = {_break_key(x.gb_code, x.gb_type, x.file, x.line): x for x in after.breaks}
    deltas = []
    for key in list(b) + [k for k in a if k not in b]:
        xb, xa = b.get(key), a.get(key)
        ref = xb or xa
        assert ref is not None
        status = "kept" if xb and xa else ("removed" if xb else "added")
        deltas.append(
            BreakDelta(
                key,
                ref.gb_code,
                f"{Path(ref.file).name}:{ref.line}",
                status,
                xb.cost_ms if xb else None,
                xa.cost_ms if xa else None,
            )
        )
    return tuple(deltas)

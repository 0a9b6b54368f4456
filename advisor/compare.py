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

from advisor import stats
from advisor.model import LatencyStats, Report, WorkloadInfo
from advisor.paths import display_path

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
    before: Report, after: Report, alpha: float = 0.05, seed: int = 0
) -> Comparison:
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
            _mode_delta(name, mb.latency if mb else None, ma.latency if ma else None, alpha, seed)
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


def _mode_delta(
    name: str,
    before: LatencyStats | None,
    after: LatencyStats | None,
    alpha: float,
    seed: int,
) -> ModeDelta:
    if not (_testable(before) and _testable(after)):
        return ModeDelta(
            name,
            before.median_ms if before else None,
            after.median_ms if after else None,
            before_n=before.n if before else 0,
            after_n=after.n if after else 0,
        )
    ratio, low, high = stats.median_ratio_ci(
        before.samples_ms, after.samples_ms, confidence=1 - alpha, seed=seed
    )
    p = stats.mann_whitney_p(before.samples_ms, after.samples_ms)
    significant = p < alpha and (high < 1.0 or low > 1.0)
    verdict = ("faster" if ratio < 1 else "slower") if significant else "no significant change"
    return ModeDelta(
        name,
        before.median_ms,
        after.median_ms,
        ratio,
        low,
        high,
        p,
        significant,
        verdict,
        before.n,
        after.n,
    )


def _testable(latency: LatencyStats | None) -> bool:
    """Enough to test: two or more finite samples (a bootstrap needs two) and a positive
    median (the ratio divides by it)."""
    if latency is None or len(latency.samples_ms) < 2:
        return False
    if not all(math.isfinite(s) for s in latency.samples_ms):
        return False
    return stats.median(latency.samples_ms) > 0


def _break_key(report: Report, index: int) -> str:
    site = report.breaks[index].site
    return f"{site.gb_code or site.gb_type} @ {display_path(site.where.file)}:{site.where.line}"


def _break_deltas(before: Report, after: Report) -> tuple[BreakDelta, ...]:
    b = {_break_key(before, i): e for i, e in enumerate(before.breaks)}
    a = {_break_key(after, i): e for i, e in enumerate(after.breaks)}
    deltas = []
    for key in list(b) + [k for k in a if k not in b]:
        xb, xa = b.get(key), a.get(key)
        ref = xb or xa
        assert ref is not None
        status = "kept" if xb and xa else ("removed" if xb else "added")
        deltas.append(
            BreakDelta(
                key,
                ref.site.gb_code,
                f"{display_path(ref.site.where.file)}:{ref.site.where.line}",
                status,
                xb.cost_ms if xb else None,
                xa.cost_ms if xa else None,
            )
        )
    return tuple(deltas)

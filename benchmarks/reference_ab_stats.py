"""The statistics and the table of `benchmarks.reference_ab` (no advisor code, no torch): each
variant's round medians, the savings paired by round with a t-interval across rounds, where it
ran, and the short table it prints."""

from __future__ import annotations

import importlib.metadata
import math
import os
import platform
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Two-sided 95% quantiles of Student's t for df 1..30, used where scipy is not installed.
T_975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t_quantile(df: int) -> float:
    """The two-sided 95% quantile of Student's t with `df` degrees of freedom."""
    try:
        from scipy.stats import t
    except ImportError:
        # past df 30 the df-30 value: a little wide, never too narrow
        return T_975[min(df, len(T_975)) - 1]
    return float(t.ppf(0.975, df))


def mean_interval(values: Sequence[float]) -> tuple[float | None, list[float] | None]:
    """Mean and 95% t-interval across rounds (no interval from fewer than two)."""
    if not values:
        return None, None
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, None
    half = t_quantile(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return mean, [mean - half, mean + half]


def saving(baseline: str, base_ms: list[float | None], ms: list[float | None]) -> dict[str, Any]:
    """The baseline's round median minus the variant's, paired by round."""
    per_round = [
        b - v if b is not None and v is not None else None for b, v in zip(base_ms, ms, strict=True)
    ]
    share = [
        s / b if s is not None and b else None for s, b in zip(per_round, base_ms, strict=True)
    ]
    mean_ms, ci_ms = mean_interval([s for s in per_round if s is not None])
    mean_share, ci_share = mean_interval([s for s in share if s is not None])
    return {
        "baseline": baseline,
        "paired_rounds": sum(s is not None for s in per_round),
        "per_round_ms": per_round,
        "mean_ms": mean_ms,
        "ci95_ms": ci_ms,
        "per_round_share": share,
        "mean_share": mean_share,
        "ci95_share": ci_share,
    }


def host_info() -> dict[str, Any]:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
    }


def torch_version() -> str | None:
    try:  # from the metadata: the parent never imports torch (seconds, and threads of its own)
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def _num(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def render_table(data: dict[str, Any]) -> str:
    """A short table: each variant's median and spread, each saving with its interval."""
    lines = [
        f"{data['host']['cpu']}, torch {data['torch']}, {data['threads']} thread(s), "
        f"{data['rounds']} rounds of {data['seconds']:g} s",
        f"{'variant':<14} {'mode':<9} {'median ms':>10} {'min-max ms':>19} {'first s':>8} "
        f"{'failed':>6}  saving vs {data['baseline']} (95% CI)",
    ]
    for name, v in data["variants"].items():
        firsts = [s for s in v["first_call_s"] if s is not None]
        spread = f"{_num(v['min_ms'], '.4f')}-{_num(v['max_ms'], '.4f')}"
        text = "baseline"
        if name in data["savings"]:
            s = data["savings"][name]
            ci_ms, ci_share = s["ci95_ms"] or [None, None], s["ci95_share"] or [None, None]
            text = (
                f"{_num(s['mean_ms'], '.4f')} ms [{_num(ci_ms[0], '.4f')}, "
                f"{_num(ci_ms[1], '.4f')}], {_num(s['mean_share'], '.1%')} "
                f"[{_num(ci_share[0], '.1%')}, {_num(ci_share[1], '.1%')}]"
            )
        lines.append(
            f"{name:<14} {v['mode']:<9} {_num(v['median_ms'], '.4f'):>10} {spread:>19} "
            f"{_num(statistics.median(firsts) if firsts else None, '.2f'):>8} "
            f"{len(v['failed_rounds']):>6}  {text}"
        )
        lines += [f"  round {f['round']} failed: {f['error']}" for f in v["failed_rounds"]]
    return "\n".join(lines)

"""The k-breaks check of the accuracy benchmark: the cost model's per-break overhead on a function
with k evenly spaced explicit breaks, against the unprofiled slope of the call time over k
(benchmarks/kbreaks.py)."""

from __future__ import annotations

import sys
from typing import Any

import torch

from advisor import runner
from advisor.core.model import Settings
from advisor.measure import cpus, torch_adapter
from advisor.measure.pipeline import RunOptions
from advisor.measure.workload import Workload
from benchmarks import kbreaks

KBREAKS_TOLERANCE = 0.20
KBREAKS_PAIRS = 3


def run_kbreaks(settings: Settings, pairs: int = KBREAKS_PAIRS) -> dict[str, Any]:
    """The model's per-break overhead on the k-breaks function against the unprofiled slope, in
    back-to-back pairs: raw µs, and rescaled to the slope run's k-break call (the model's cost
    as a share of its own run's call, times the slope run's call), which cancels the drift
    between the two runs."""
    rows = []
    for index in range(pairs):
        print(f"[kbreaks] pair {index + 1}/{pairs}: unprofiled slope ...", file=sys.stderr)
        with cpus.pinned(settings.threads):
            slope, per_call = kbreaks.measure_slope()
        k = max(per_call)
        workload = Workload(kbreaks.make_function(k), (torch.randn(16),), {}, f"kbreaks_{k}")
        options = RunOptions(f"kbreaks_{k}", "cpu", settings, ("eager", "default"))
        report = runner.run_workload(workload, options, "cpu", lambda _m: None).report
        torch_adapter.reset_dynamo()
        default = report.mode("default")
        if not report.breaks or default is None or default.latency is None or slope <= 0:
            continue
        model_us = sum(e.parts.overhead_ms for e in report.breaks) * 1e3 / len(report.breaks)
        call_us = default.latency.median_ms * 1e3
        rescaled_us = model_us / call_us * per_call[k]
        rows.append(
            {
                "k_values": {str(kk): v for kk, v in per_call.items()},
                "slope_us_per_break": slope,
                "breaks_found": len(report.breaks),
                "model_us_per_break": model_us,
                "model_run_call_us": call_us,
                "model_rescaled_us": rescaled_us,
                "raw_error": model_us / slope - 1.0,
                "error": rescaled_us / slope - 1.0,
            }
        )
    return _kbreaks_summary(rows)


def _kbreaks_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def median(values: list[float]) -> float | None:
        ordered = sorted(values)
        return ordered[len(ordered) // 2] if ordered else None

    error = median([r["error"] for r in rows])
    raw = median([r["raw_error"] for r in rows])
    return {
        "pairs": rows,
        "k": max(int(kk) for kk in rows[0]["k_values"]) if rows else None,
        "error": error,
        "raw_error": raw,
        "within": error is not None and abs(error) <= KBREAKS_TOLERANCE,
        "raw_within": raw is not None and abs(raw) <= KBREAKS_TOLERANCE,
    }

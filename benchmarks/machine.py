"""The machine's state around a benchmark: wait for it to quiet down, and say how busy it was.

Numbers that go into reports/benchmarks/ must be measured on a machine that is not busy with
other work where that can be had; where it cannot (within a time limit), the benchmark runs
anyway and its result says so.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Any

from advisor.core.model import LatencyStats

QUIET_LOAD = 1.5  # one-minute load average below which the machine counts as quiet here


@dataclass(frozen=True)
class Quiet:
    """How the wait for a quiet machine went."""

    load_at_start: float | None  # one-minute load average when measuring began
    waited_s: float
    quiet: bool  # the load fell below QUIET_LOAD before the limit

    def note(self) -> str:
        if self.load_at_start is None:
            return "load average unavailable on this platform"
        state = (
            "quiet"
            if self.quiet
            else f"NOT quiet (never below {QUIET_LOAD} within the wait; ran anyway)"
        )
        return (
            f"one-minute load average {self.load_at_start:.2f} when measuring began "
            f"({state}; waited {self.waited_s:.0f} s)"
        )


def load1() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def wait_until_quiet(limit_s: float, poll_s: float = 15.0) -> Quiet:
    """Poll the load average until it is below QUIET_LOAD or `limit_s` has passed."""
    start = time.monotonic()
    while True:
        load = load1()
        waited = time.monotonic() - start
        if load is None or load < QUIET_LOAD:
            return Quiet(load, waited, load is not None)
        if waited >= limit_s:
            return Quiet(load, waited, False)
        print(f"waiting for a quiet machine: load {load:.2f}", file=sys.stderr, flush=True)
        time.sleep(poll_s)


def latency_summary(lat: LatencyStats) -> dict[str, Any]:
    """One mode's timing as the benchmarks record it."""
    return {
        "median_ms": lat.median_ms,
        "iqr_over_median": lat.relative_iqr,
        "ci_half_width": lat.relative_ci,
        "target_met": lat.target_met,
        "blocks": lat.n,
        "calls_per_block": lat.calls_per_sample,
    }

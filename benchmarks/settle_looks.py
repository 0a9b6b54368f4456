"""What the settling waves cost in false savings and buy in found ones: the replicated
protocol's own rule (`advisor.measure.settle_rule.to_settle`, `reading`) run on simulated
waves, the rule as it is against the one before it (at most two more waves, and only for a
saving whose point was over the floor). Nothing here is timed.

Each trial draws an arm's per-wave share of the step from a normal distribution (the true
saving, the per-wave standard deviation), four waves, then one more while the rule says the
saving is unsettled and could lead, up to its limit; the saving is "measured" as the judge
reads it: the low end of where a rerun would put it above zero, and at least the minimum
effect. Per-wave standard deviations: 3% of the step (the zoo's quiet targets) and 9% (the
kornia CNN's processes in the training sweep). A true saving of 0 gives the rule's false
positives; 5% and 9% its power.

    python -m benchmarks.settle_looks [--trials 2000] [--out DIR]

Results to reports/benchmarks/settle_looks/settle_looks.{json,md}.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from tabulate import tabulate

from advisor.core import policy
from advisor.core.measured import Settings
from advisor.measure import replicate, settle_rule
from advisor.measure.arms import ArmTask, mode_arm, what_if_arm
from advisor.measure.stages import WhatIfPlan
from benchmarks.study_output import write_study

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "reports" / "benchmarks" / "settle_looks"
WAVES = 4
SPREADS = (0.03, 0.09)
SAVINGS = (0.0, 0.05, 0.09)
PLAN = replicate.Plan(
    waves=WAVES,
    rounds=1,
    settle_waves=policy.SETTLE_WAVES,
    min_effect=policy.MIN_EFFECT,
    run_spread=policy.SAVING_RUN_SPREAD,
)
OpenRule = Callable[[dict[str, replicate.ArmRecord], replicate.ArmRecord], bool]


def _record(arm: Any, medians: list[float]) -> replicate.ArmRecord:
    task = ArmTask(arm, "t.py:f", "{}", "cpu", Settings())
    return replicate.ArmRecord(task, samples=[[m] for m in medians])


def open_now(records: dict[str, replicate.ArmRecord], baseline: replicate.ArmRecord) -> bool:
    """The protocol's rule: the arm is among `settle_rule.to_settle`'s."""
    return bool(settle_rule.to_settle(records, baseline, PLAN))


def open_before(records: dict[str, replicate.ArmRecord], baseline: replicate.ArmRecord) -> bool:
    """The rule before: a point over the floor whose rerun interval still holds zero."""
    variant = next(r for r in records.values() if r is not baseline)
    reading = settle_rule.reading(variant, baseline, PLAN)
    floor = settle_rule.floor(PLAN)
    return reading is not None and reading.share > floor and reading.low <= 0


def trial(
    rng: np.random.Generator, spread: float, saving: float, rule: OpenRule, most: int
) -> tuple[bool, int]:
    """One simulated arm: whether it ended measured, and its waves."""
    shares = list(rng.normal(saving, spread, WAVES))
    drift = list(rng.lognormal(0.0, 0.05, WAVES))  # whole waves move; pairing cancels it
    baseline = _record(mode_arm("default"), drift)
    variant = _record(what_if_arm(WhatIfPlan("fused", ())), [])
    records = {r.label: r for r in (baseline, variant)}
    variant.samples = [[d * (1 - s)] for d, s in zip(drift, shares, strict=True)]
    while len(variant.samples) < WAVES + most and rule(records, baseline):
        d, s = float(rng.lognormal(0.0, 0.05)), float(rng.normal(saving, spread))
        baseline.samples.append([d])
        variant.samples.append([d * (1 - s)])
    reading = settle_rule.reading(variant, baseline, PLAN)
    measured = reading is not None and reading.low > 0 and reading.share >= PLAN.min_effect
    return measured, len(variant.samples)


def study(trials: int, seed: int = 0) -> list[dict[str, Any]]:
    rules: dict[str, tuple[OpenRule, int]] = {
        "before (2 more, point over the floor)": (open_before, 2),
        f"now ({policy.SETTLE_WAVES} more, interval reaching the floor)": (
            open_now,
            policy.SETTLE_WAVES,
        ),
    }
    rows = []
    for spread in SPREADS:
        for saving in SAVINGS:
            for name, (rule, most) in rules.items():
                rng = np.random.default_rng(seed)
                results = [trial(rng, spread, saving, rule, most) for _ in range(trials)]
                rows.append(
                    {
                        "spread": spread,
                        "saving": saving,
                        "rule": name,
                        "measured": float(np.mean([m for m, _ in results])),
                        "mean_waves": float(np.mean([w for _, w in results])),
                        "trials": trials,
                    }
                )
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    table = [
        [
            f"{r['spread']:.0%}",
            f"{r['saving']:.0%}",
            r["rule"],
            f"{r['measured']:.1%}",
            f"{r['mean_waves']:.1f}",
        ]
        for r in rows
    ]
    headers = ["per-wave SD", "true saving", "settling rule", "measured", "mean waves"]
    floor = settle_rule.floor(PLAN)
    return (
        "# Settling waves: false savings and found ones\n\n"
        "`python -m benchmarks.settle_looks`: the replicated protocol's settling rule on "
        f"simulated waves ({rows[0]['trials'] if rows else 0} trials a row; four waves, then "
        "more while the rule says so). A true saving of 0% measured is a false positive; "
        f"the floor is {floor:.1%} of the step, the minimum effect "
        f"{PLAN.min_effect:.0%}.\n\n" + tabulate(table, headers, tablefmt="github") + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.settle_looks")
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if args.trials < 1:
        print("settle_looks: --trials must be at least 1", file=sys.stderr)
        return 2
    rows = study(args.trials)
    write_study(args.out, "settle_looks", {"rows": rows, "floor": settle_rule.floor(PLAN)},
                render(rows))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

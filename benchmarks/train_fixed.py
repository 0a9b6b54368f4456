"""The training scenarios' broken-vs-fixed savings against an independent reference (#29).

    python -m benchmarks.train_fixed [--runs reports/train-fixed-runs] [--rounds 5]
    python -m benchmarks.train_fixed --judge-only [--runs ...]

For each training scenario with a `fixed` variant: the advisor's replicated run of the broken
step (one pinned thread; saved in RUNS/<name>/) and the saving it projects for the kind of fix
the variant applies (`accuracy_cases.projected_for_fix`: the measured saving where the decision
took that fix, else the estimate for it), against `benchmarks.reference_ab`'s broken vs fixed
(fresh processes, rounds outermost, no code shared with the advisor's measuring;
RUNS/<name>/reference.json). Compared as shares of each run's own default step (this host's
speed drifts between runs), with the raw ms beside: within 25% of the reference's share, or
inside the reference's own 95% interval. `--judge-only` re-judges the saved runs with today's
rules and measures nothing.

Writes reports/benchmarks/train_fixed/train_fixed.{json,md}.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Any

from tabulate import tabulate

from advisor.core.model import Report, Settings
from benchmarks import reference_ab
from benchmarks.accuracy_cases import advisor_run, default_ms, judge_saved, projected_for_fix
from benchmarks.study_output import write_study

SCENARIOS = ("train_branch", "train_item", "train_mask", "train_print", "train_whole_step")
OUT = Path("reports/benchmarks/train_fixed")
RUNS = Path("reports/train-fixed-runs")
TOLERANCE = 0.25
THREADS = 1
SETTINGS = Settings(threads=THREADS, protocol="replicated")


def measure(name: str, runs: Path, rounds: int) -> None:
    """The advisor's run of the broken step, then the reference A/B, both saved under RUNS."""
    folder = runs / name
    advisor_run(name, SETTINGS, save_to=folder)
    variants = {
        "broken": f"scenarios.{name}:workload@default",
        "fixed": f"scenarios.{name}:fixed@default",
    }
    data = reference_ab.measure(variants, rounds, THREADS, 1.0, "default")
    (folder / "reference.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def scenario_row(name: str, report: Report, reference: dict[str, Any]) -> dict[str, Any]:
    """The advisor's projected saving against the reference's, as shares of each one's step."""
    fix_kind = getattr(importlib.import_module(f"scenarios.{name}"), "FIX_KIND", None)
    projected = projected_for_fix(report, fix_kind)
    step = default_ms(report)
    ref = reference["savings"]["fixed"]
    share = projected / step if step else None
    ref_share, ref_ci = ref.get("mean_share"), ref.get("ci95_share")
    error = share / ref_share - 1 if share is not None and ref_share else None
    inside = bool(ref_ci and share is not None and ref_ci[0] <= share <= ref_ci[1])
    first = report.actions[0] if report.actions else None
    return {
        "name": name,
        "fix_kind": fix_kind,
        "default_ms": step,
        "projected_ms": projected,
        "projected_share": share,
        "reference_ms": ref.get("mean_ms"),
        "reference_ci_ms": ref.get("ci95_ms"),
        "reference_share": ref_share,
        "reference_ci_share": ref_ci,
        "reference_default_ms": reference["variants"]["broken"]["median_ms"],
        "rounds": ref.get("paired_rounds"),
        "error_share": error,
        "within": error is not None and abs(error) <= TOLERANCE,
        "inside": inside,
        "first_action": first.kind if first else None,
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _interval(ci: list[float] | None, pct: bool) -> str:
    if not ci:
        return "-"
    return f"[{ci[0]:.1%}, {ci[1]:.1%}]" if pct else f"[{ci[0]:.3g}, {ci[1]:.3g}]"


def render(rows: list[dict[str, Any]]) -> str:
    table = [
        [
            r["name"], r["fix_kind"] or "-", f"{r['default_ms']:.3g}",
            f"{r['projected_ms']:.3g} ({_pct(r['projected_share'])})",
            f"{r['reference_ms']:.3g} {_interval(r['reference_ci_ms'], False)}",
            f"{_pct(r['reference_share'])} {_interval(r['reference_ci_share'], True)}",
            _pct(r["error_share"]),
            "within 25%" if r["within"] else ("inside its interval" if r["inside"] else "off"),
            r["first_action"] or "-",
        ]
        for r in rows
    ]  # fmt: skip
    agreed = sum(bool(r["within"] or r["inside"]) for r in rows)
    within = sum(bool(r["within"]) for r in rows)
    headers = [
        "scenario", "fix", "default ms", "advisor: saving ms (share)",
        "reference: saving ms [95%]", "reference: share [95%]", "share error", "agrees",
        "first action",
    ]  # fmt: skip
    return (
        "# Training scenarios: the advisor's saving for the fix against a fresh-process "
        "reference\n\n`python -m benchmarks.train_fixed`: each broken training step run by the "
        "advisor (replicated, one pinned thread), its projected saving for the kind of fix the "
        "scenario's `fixed` variant applies, against `benchmarks.reference_ab` (broken vs "
        "fixed, fresh processes, rounds outermost). Shares are of each run's own default step."
        f"\n\nAgrees (within 25% of the reference's share, or inside its interval): {agreed} of "
        f"{len(rows)}; within 25%: {within} of {len(rows)}. A wide reference interval agrees "
        "with much: it says no scenario disagrees, not that the saving is that close.\n\n"
        + tabulate(table, headers, tablefmt="github")
        + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=RUNS)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--judge-only", action="store_true")
    parser.add_argument("--only", action="append", default=[], help="a scenario (repeatable)")
    args = parser.parse_args(argv)
    names = tuple(args.only) or SCENARIOS
    if not args.judge_only:
        for name in names:
            measure(name, args.runs, args.rounds)
    rows = []
    for name in SCENARIOS:
        folder = args.runs / name
        if not (folder / "reference.json").is_file():
            print(f"train_fixed: {name}: no saved run under {folder}", file=sys.stderr)
            continue
        reference = json.loads((folder / "reference.json").read_text(encoding="utf-8"))
        rows.append(scenario_row(name, judge_saved(folder), reference))
    if not rows:
        return 2
    write_study(args.out, "train_fixed", {"scenarios": rows}, render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

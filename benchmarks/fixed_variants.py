"""The scenarios' broken-vs-fixed savings against an independent reference (#27, #29).

    python -m benchmarks.fixed_variants --set training [--runs DIR] [--rounds 5]
    python -m benchmarks.fixed_variants --set scenarios
    python -m benchmarks.fixed_variants --set training --judge-only [--runs DIR]

For each scenario of the set (the training scenarios, or the inference ones) with a `fixed`
variant: the advisor's replicated run of the broken workload (one pinned thread; saved in
RUNS/<name>/) and the saving it projects for the kind of fix
the variant applies (`accuracy_cases.projected_for_fix`: the measured saving where the decision
took that fix, else the estimate for it), against `benchmarks.reference_ab`'s broken vs fixed
(fresh processes, rounds outermost, no code shared with the advisor's measuring;
RUNS/<name>/reference.json). Compared as shares of each run's own default step (this host's
speed drifts between runs), with the raw ms beside: within 25% of the reference's share, or
inside the reference's own 95% interval. `--judge-only` re-judges the saved runs with today's
rules and measures nothing.

Writes reports/benchmarks/train_fixed/train_fixed.{json,md} (training; its runs in
reports/train-fixed-runs/) or reports/benchmarks/scenarios_fixed/scenarios_fixed.{json,md}
(inference; runs in reports/scenarios-fixed-runs/).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tabulate import tabulate

from advisor.core import policy
from advisor.core.model import Report, Settings
from advisor.measure.workload import scenario_names
from benchmarks import reference_ab
from benchmarks.accuracy_cases import advisor_run, default_ms, judge_saved, projected_for_fix
from benchmarks.study_output import write_study

TOLERANCE = 0.25
THREADS = 1
# as `advisor run` measures: replicated, with its more waves for an unsettled saving
SETTINGS = Settings(threads=THREADS, protocol="replicated", settle_waves=policy.SETTLE_WAVES)


@dataclass(frozen=True)
class StudySet:
    """Which scenarios a run of the study covers, and where its results go."""

    stem: str  # reports/benchmarks/STEM/STEM.{json,md}
    runs: Path  # the advisor's runs and the references, not committed
    title: str  # what the table's scenarios are
    training: bool

    @property
    def out(self) -> Path:
        return Path("reports/benchmarks") / self.stem

    def names(self) -> tuple[str, ...]:
        """The set's scenarios that have a `fixed` variant, as the accuracy benchmark picks them."""
        return tuple(
            name
            for name in scenario_names()
            if name.startswith("train_") == self.training
            and hasattr(importlib.import_module(f"scenarios.{name}"), "fixed")
        )


SETS = {
    "training": StudySet("train_fixed", Path("reports/train-fixed-runs"), "Training", True),
    "scenarios": StudySet(
        "scenarios_fixed", Path("reports/scenarios-fixed-runs"), "Inference", False
    ),
}


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


def render(rows: list[dict[str, Any]], study: StudySet = SETS["training"]) -> str:
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
        f"# {study.title} scenarios: the advisor's saving for the fix against a fresh-process "
        f"reference\n\n`python -m benchmarks.fixed_variants --set {_set_name(study)}`: each "
        "broken workload run by the "
        "advisor (replicated, one pinned thread), its projected saving for the kind of fix the "
        "scenario's `fixed` variant applies, against `benchmarks.reference_ab` (broken vs "
        "fixed, fresh processes, rounds outermost). Shares are of each run's own default step."
        f"\n\nAgrees (within 25% of the reference's share, or inside its interval): {agreed} of "
        f"{len(rows)}; within 25%: {within} of {len(rows)}. A wide reference interval agrees "
        "with much: it says no scenario disagrees, not that the saving is that close.\n\n"
        + tabulate(table, headers, tablefmt="github")
        + "\n"
    )


def _set_name(study: StudySet) -> str:
    return next(name for name, known in SETS.items() if known == study)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=sorted(SETS), default="training")
    parser.add_argument("--runs", type=Path, help="default: the set's folder under reports/")
    parser.add_argument("--out", type=Path, help="default: reports/benchmarks/<the set's stem>")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--judge-only", action="store_true")
    parser.add_argument("--only", action="append", default=[], help="a scenario (repeatable)")
    args = parser.parse_args(argv)
    study = SETS[args.set]
    runs, out = args.runs or study.runs, args.out or study.out
    known = study.names()
    unknown = [name for name in args.only if name not in known]
    if unknown:
        print(f"fixed_variants: not a {args.set} scenario with a fixed variant: "
              f"{', '.join(unknown)}", file=sys.stderr)  # fmt: skip
        return 2
    if not args.judge_only:
        for name in tuple(args.only) or known:
            measure(name, runs, args.rounds)
    rows = []
    for name in known:
        folder = runs / name
        if not (folder / "reference.json").is_file():
            print(f"fixed_variants: {name}: no saved run under {folder}", file=sys.stderr)
            continue
        reference = json.loads((folder / "reference.json").read_text(encoding="utf-8"))
        rows.append(scenario_row(name, judge_saved(folder), reference))
    if not rows:
        return 2
    write_study(out, study.stem, {"scenarios": rows}, render(rows, study))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How often the advisor's first action is right over several runs of the same rule
(`python -m benchmarks.first_action_rate RUN.json ... --out DIR`): each RUN.json is one sweep
scored by `benchmarks.placements_reference` against the same reference. One sweep's count moves
with the run on a target whose processes differ by more than the savings it ranks (the kornia
CNN's did: 2 of 4 tuning targets right in one sweep of a rule and 3 of 4 in the one before), so
a rate that a rerun would repeat is each target's share of runs right, averaged over the
targets of a half: every target weighs the same however many runs scored it. A run may score a
subset of the targets (a rerun of the ones in doubt); a target's rate reads only the runs that
scored it.

`--supersede` reads each target from the last run that scored it alone: for a rerun scored
against a reference of its own (measured the same hour on the same host) that replaces, for its
targets, a run scored against an older reference. The earlier runs stay in the table, marked as
not counted. A run given as `LABEL@REFERENCE=PATH` names the reference it was scored against:
runs with the same REFERENCE share it, so with `--supersede` a target reads every run scored
against its last reference (several sweeps of one rule against one newer reference), not only
the last run."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tabulate import tabulate

from benchmarks.study_output import write_study

HALVES = ("tuning", "held out")


@dataclass(frozen=True)
class TargetRate:
    """One target over the runs that scored it: each run's first action and whether it was the
    reference's best (or one the reference cannot tell from it)."""

    name: str
    half: str
    runs: tuple[str, ...]  # the run labels that scored it, in the order given
    first_actions: tuple[str, ...]
    right: tuple[bool, ...]
    reference_best: str  # the last run's (the runs share one reference, or it alone counts)

    @property
    def rate(self) -> float:
        return sum(self.right) / len(self.right)


def target_rates(
    runs: dict[str, list[dict[str, Any]]],
    supersede: bool = False,
    references: dict[str, str] | None = None,
) -> list[TargetRate]:
    """Each target's `TargetRate` from `runs` (label -> that run's scored rows), targets in the
    order they first appear; with `supersede`, from the runs scored against the last reference
    that scored it only (`references`: label -> its reference; a run not in it has its own)."""
    seen: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    last_reference: dict[str, str] = {}
    for label, rows in runs.items():
        reference = (references or {}).get(label, label)
        for row in rows:
            scored = seen.setdefault(row["name"], [])
            if supersede and last_reference.get(row["name"]) != reference:
                scored.clear()
            last_reference[row["name"]] = reference
            scored.append((label, row))
    return [
        TargetRate(
            name=name,
            half=scored[0][1]["half"],
            runs=tuple(label for label, _ in scored),
            first_actions=tuple(row["first_action"] for _, row in scored),
            right=tuple(bool(row["first_right"]) for _, row in scored),
            reference_best=scored[-1][1]["reference_best"],
        )
        for name, scored in seen.items()
    ]


def half_rate(rates: list[TargetRate], half: str | None = None) -> float | None:
    """The mean of the targets' rates over `half` (None: every target); None without targets."""
    part = [r.rate for r in rates if half is None or r.half == half]
    return sum(part) / len(part) if part else None


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def summary(rates: list[TargetRate]) -> list[str]:
    lines = []
    for half in (*HALVES, None):
        part = [r for r in rates if half is None or r.half == half]
        scored = sum(len(r.right) for r in part)
        lines.append(
            f"- {half or 'all'}: {_percent(half_rate(rates, half))} of first actions right, "
            f"target by target ({sum(sum(r.right) for r in part)} of {scored} scored calls "
            f"over {len(part)} targets)"
        )
    return lines


SAME_REFERENCE = (
    "each column is one sweep scored by `benchmarks.placements_reference` against the same "
    "reference (the advisor's first action, and whether it is the reference's best or one the "
    "reference cannot tell from it); a blank is a target that run did not measure"
)
SUPERSEDED = (
    "each column is one sweep scored by `benchmarks.placements_reference`, each against its "
    "own reference (`--supersede`): a target counts only the runs scored against its last "
    "reference (a column `LABEL@REFERENCE` shares REFERENCE with the others so named), an "
    'earlier run\'s cell reads "not counted"; a blank is a target that run did not measure'
)


def render(
    rates: list[TargetRate],
    labels: list[str],
    shown: dict[str, list[dict[str, Any]]],
    supersede: bool = False,
) -> str:
    """The table: a column per run in `labels`, each cell from `shown` (every run's rows, the
    superseded included), counted when the target's rate read it."""
    table = [
        [r.name, r.half, r.reference_best,
         *[_run_cell(r, label, shown[label]) for label in labels], _percent(r.rate)]
        for r in rates
    ]  # fmt: skip
    return (
        "# The advisor's first action over reruns of one rule\n\n"
        f"`python -m benchmarks.first_action_rate`: {SUPERSEDED if supersede else SAME_REFERENCE}"
        ". A half's rate is the mean of its targets' rates.\n\n"
        + "\n".join(summary(rates))
        + "\n\n"
        + tabulate(table, ["target", "half", "reference's best", *labels, "rate"], "github")
        + "\n"
    )


def _run_cell(rate: TargetRate, label: str, rows: list[dict[str, Any]]) -> str:
    if label in rate.runs:
        at = rate.runs.index(label)
        return f"{rate.first_actions[at]} ({'right' if rate.right[at] else 'wrong'})"
    row = next((row for row in rows if row["name"] == rate.name), None)
    return "" if row is None else f"{row['first_action']} (not counted)"


def reference_of(label: str) -> str:
    """The reference a run was scored against: REFERENCE of `LABEL@REFERENCE`, else the run's
    own label (a reference of its own)."""
    return label.partition("@")[2] or label


def _label_and_path(text: str) -> tuple[str, Path]:
    label, sep, path = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r}: expected LABEL=PATH to a scored JSON")
    return label, Path(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "runs", nargs="+", type=_label_and_path,
        help="LABEL=PATH or LABEL@REFERENCE=PATH: a run's label (and the reference it was "
        "scored against, shared by the runs that name it) and its placements_reference.json, "
        "in run order",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--supersede", action="store_true",
        help="each target from the last run that scored it only (a rerun with its own reference)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    labels = [label for label, _ in args.runs]
    if len(set(labels)) != len(labels):
        print("first_action_rate: each run needs a label of its own", file=sys.stderr)
        return 2
    try:
        runs = {label: json.loads(path.read_text())["targets"] for label, path in args.runs}
        references = {label: reference_of(label) for label in labels}
        rates = target_rates(runs, args.supersede, references)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"first_action_rate: cannot read a scored run: {exc}", file=sys.stderr)
        return 2
    data = {
        "runs": {label: str(path) for label, path in args.runs},
        "targets": [asdict(r) | {"rate": r.rate} for r in rates],
        "halves": {half or "all": half_rate(rates, half) for half in (*HALVES, None)},
        "supersede": args.supersede,
    }
    write_study(args.out, "first_action_rate", data, render(rates, labels, runs, args.supersede))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The advisor's first action from several runs judged together, against each target's last
reference (nothing here measures: saved sweeps are judged again, `advisor.judge.pool`).

    python -m benchmarks.pooled_runs --run A=SWEEP_A --run B=SWEEP_B ... \
        --scored SCORED.json [--scored NEWER.json ...] --out DIR

Each `--run` is a sweep folder (`NAME/measurements.json` per target). Each `--scored` is a
table of `benchmarks.placements_reference` (oldest first): a target's reference options, best
and half are read from the last table that scored it. For every target: each run judged alone,
every pair of runs judged together, and all its runs together, each first action scored with
`placements_reference.first_right` (unchanged). A half's rate is the mean of its targets'
rates, a target's the share of its judgements right, so that a target measured in five runs
weighs what one measured in two does.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from tabulate import tabulate

from advisor.judge import judge
from advisor.judge.pool import pooled
from advisor.render.report_io import load_measurements
from benchmarks.first_action_rate import HALVES
from benchmarks.placements_reference import first_right, reference_best
from benchmarks.study_output import write_study
from benchmarks.training_placements import target_row

WAYS = ("alone", "pairs", "all")


@dataclass(frozen=True)
class Judged:
    """One judgement of a target: the runs pooled, the first action, whether it is right."""

    runs: tuple[str, ...]
    first_action: str
    right: bool


@dataclass(frozen=True)
class Reference:
    half: str
    best: str
    options: dict[str, dict[str, Any]]


def references(tables: list[Path]) -> dict[str, Reference]:
    """Each target's reference from the last table that scored it."""
    found: dict[str, Reference] = {}
    for table in tables:
        for row in json.loads(table.read_text(encoding="utf-8"))["targets"]:
            options = {k: o["reference"] for k, o in row["options"].items() if o.get("reference")}
            best = reference_best(options)
            if best != row["reference_best"]:
                raise ValueError(f"{table}: {row['name']}: its best reads {best} here")
            found[row["name"]] = Reference(row["half"], best, options)
    return found


def judged(name: str, labels: tuple[str, ...], folders: dict[str, Path], ref: Reference) -> Judged:
    """The target's runs `labels` judged together, its first action scored."""
    runs = [load_measurements(folders[label] / name) for label in labels]
    first = target_row(name, judge(pooled(runs, labels)))["first_action"]
    return Judged(labels, first, first_right(first, ref.options, ref.best))


def target_judgements(
    name: str, folders: dict[str, Path], ref: Reference
) -> dict[str, list[Judged]]:
    """The target judged alone in each run that measured it, in every pair, and all at once."""
    have = tuple(label for label, f in folders.items() if (f / name / "measurements.json").exists())
    ways = {
        "alone": [(label,) for label in have],
        "pairs": list(combinations(have, 2)),
        "all": [have] if len(have) > 1 else [],
    }
    # two runs' pair is also all of them: each pool is judged once
    pools = {labels for way in WAYS for labels in ways[way]}
    done = {labels: judged(name, labels, folders, ref) for labels in pools}
    return {way: [done[labels] for labels in ways[way]] for way in WAYS}


def rate(judgements: list[Judged]) -> float | None:
    return sum(j.right for j in judgements) / len(judgements) if judgements else None


def half_rates(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per way, each half's mean of its targets' rates (and all targets')."""
    out: dict[str, dict[str, float | None]] = {}
    for way in WAYS:
        out[way] = {}
        for half in (*HALVES, "all"):
            rates = [r["rates"][way] for r in rows if half in ("all", r["half"])]
            rates = [x for x in rates if x is not None]
            out[way][half] = sum(rates) / len(rates) if rates else None
    return out


def render(
    rows: list[dict[str, Any]], halves: dict[str, dict[str, float | None]], runs: dict[str, Path]
) -> str:
    def cell(row: dict[str, Any], way: str) -> str:
        js = row[way]
        if not js:
            return "-"
        right = sum(j["right"] for j in js)
        firsts = ", ".join(f"{'+'.join(j['runs'])}: {j['first_action']}" for j in js)
        return f"{right} of {len(js)} ({firsts})"

    table = [[r["name"], r["half"], r["reference_best"], *(cell(r, w) for w in WAYS)] for r in rows]
    lines = [
        f"- {way}: "
        + ", ".join(f"{half} {'-' if v is None else f'{v:.0%}'}" for half, v in halves[way].items())
        for way in WAYS
    ]
    return (
        "# The first action from runs judged together\n\n"
        "`python -m benchmarks.pooled_runs`: each target judged from each saved run alone, "
        "from every pair of runs together (`advisor judge RUN RUN`) and from all of them, each "
        "first action scored against the target's last reference "
        "(`placements_reference.first_right`). A half's rate is the mean of its targets' "
        "rates. Runs: "
        + ", ".join(f"{k} = `{v.name}`" for k, v in runs.items())
        + ".\n\n"
        + "\n".join(lines)
        + "\n\n"
        + tabulate(table, ["target", "half", "reference's best", *WAYS], tablefmt="github")
        + "\n"
    )


def _pairs(values: list[str], what: str) -> dict[str, Path]:
    out = {}
    for value in values:
        label, sep, path = value.partition("=")
        if not sep or not label or label in out:
            raise SystemExit(f"pooled_runs: {what} must be a unique LABEL=PATH: {value}")
        out[label] = Path(path)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="append", required=True, help="LABEL=SWEEP_FOLDER")
    parser.add_argument("--scored", action="append", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    folders = _pairs(args.run, "--run")
    refs = references(args.scored)
    rows = []
    for name, ref in refs.items():
        ways = target_judgements(name, folders, ref)
        if not ways["alone"]:
            print(f"pooled_runs: {name}: no run measured it", file=sys.stderr)
            continue
        rows.append({
            "name": name, "half": ref.half, "reference_best": ref.best,
            **{way: [asdict(j) for j in js] for way, js in ways.items()},
            "rates": {way: rate(js) for way, js in ways.items()},
        })  # fmt: skip
    halves = half_rates(rows)
    data = {"runs": {k: str(v) for k, v in folders.items()}, "targets": rows, "halves": halves}
    write_study(args.out, "pooled_runs", data, render(rows, halves, folders))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The training placements against an independent reference (#29 item 4): for each target of
`benchmarks/manifests/training_placements.toml`, every placement of its form written by hand
(`benchmarks/trainzoo/placed.py`: `model.compile()`, `torch.compile(opt.step)`, `fused=True`
with the model compiled or not, `torch.compile(step)`, glibc's malloc keeping freed memory) and
measured by `benchmarks.reference_ab` (fresh processes, rounds outermost, no code shared with
the advisor's measuring), against the advisor's measured placements in
`reports/benchmarks/training_placements/placements.json`.

    python -m benchmarks.placements_reference [--runs reports/placements-reference-runs]
    python -m benchmarks.placements_reference --judge-only
    python -m benchmarks.placements_reference --judge-only --runs NEW --also OLD
    python -m benchmarks.placements_reference --reference SAVED.json --advisor NEW.json --out DIR
    python -m benchmarks.placements_reference --only NAME --option allocator --runs DIR

For each placement: the advisor's saving as a share of its default step against the reference's
(agrees within 25% of the reference's share, or inside the reference's 95% interval). For each
target: the reference's best option (the placement, or eager, with the largest saving whose
interval is above zero; "keep" when none is) and whether the advisor's first action is it, or
one the reference cannot tell from it (inside the best's interval). The training zoo's tuning
and held-out halves are reported apart. Writes reports/benchmarks/placements_reference/.

`--also` pools earlier campaigns' saved runs with `--runs` (a target's rounds from every campaign
that measured it): each round is fresh processes of its own, so the rounds of two campaigns are
alike as samples; shares, not ms, are pooled (the host's speed moves between campaigns). Each
campaign's own mean stays beside the pooled one, so a campaign that disagrees is seen.

`--reference` judges a new advisor sweep against the reference sides of a saved table (each
option's share and interval, as measured and pooled before), without the run folders; with
`--also`, options the table lacks come from those campaigns. `--option` (repeatable) measures
only those options beside the form's own step.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from tabulate import tabulate

from advisor.sweep.manifest import load_manifest
from benchmarks import reference_ab, reference_ab_stats
from benchmarks.study_output import write_study

MANIFEST = Path("benchmarks/manifests/training_placements.toml")
ADVISOR = Path("reports/benchmarks/training_placements/placements.json")
OUT = Path("reports/benchmarks/placements_reference")
RUNS = Path("reports/placements-reference-runs")
TOLERANCE = 0.25
THREADS = 1
FACTORY = "benchmarks.trainzoo.placed"
# The options of each form: the baseline (the form itself) first, then what it is compared with.
OPTIONS = {
    "module": ("module", "eager", "optimizer", "step", "fused", "eager_fused", "allocator"),
    "step": ("step", "eager", "module", "split", "eager_fused", "allocator"),
}
# Options whose hand-written factory differs by form: `placed.allocator_module`, `..._step`.
BY_FORM = ("allocator",)


def manifest_targets(path: Path = MANIFEST) -> list[tuple[str, str, str]]:
    """(name, model, form) of each target in the placements manifest."""
    targets = load_manifest(path).targets
    return [(t.name, t.params["model"], t.params["form"]) for t in targets]


def measure(
    name: str,
    model: str,
    form: str,
    runs: Path,
    rounds: int,
    seconds: float,
    only: tuple[str, ...] = (),
) -> None:
    """One target's campaign: every option of its form (or the baseline and those in `only`)."""
    options = [o for o in OPTIONS[form] if o == form or not only or o in only]
    variants = {
        ("default" if option == form else option): f"{FACTORY}:{factory(option, form)}@eager"
        for option in options
    }
    data = reference_ab.measure(variants, rounds, THREADS, seconds, "eager", {"model": model})
    folder = runs / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reference.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def factory(option: str, form: str) -> str:
    return f"{option}_{form}" if option in BY_FORM else option


def advisor_options(row: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The advisor's measured savings by option, shares of its default step; eager's from its
    modes (its step against the default's)."""
    found = {kind: dict(p) for kind, p in row["placements"].items()}
    found.pop("regional", None)  # a break-free-modules placement has no hand-written twin here
    if row.get("eager_ms") and row.get("default_ms"):
        share = (row["default_ms"] - row["eager_ms"]) / row["default_ms"]
        found["eager"] = {"share": share, "ci_share": None}
    return found


def reference_options(reference: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = {}
    for option, saving in reference["savings"].items():
        if saving.get("mean_share") is not None:
            found[option] = {"share": saving["mean_share"], "ci_share": saving.get("ci95_share")}
    return found


def pooled(references: list[dict[str, Any]]) -> dict[str, Any]:
    """One target's reference from several campaigns' saved runs (oldest first): each option's
    per-round shares together, their mean and 95% t-interval, each campaign's mean beside."""
    if len(references) == 1:
        return references[0]
    options = dict.fromkeys(o for r in references for o in r["savings"])
    savings = {}
    for option in options:
        runs = [r["savings"][option] for r in references if option in r["savings"]]
        shares = [s for run in runs for s in run["per_round_share"] if s is not None]
        mean, ci = reference_ab_stats.mean_interval(shares)
        savings[option] = {
            "baseline": runs[0]["baseline"],
            "paired_rounds": len(shares),
            "mean_share": mean,
            "ci95_share": ci,
            "campaign_shares": [run["mean_share"] for run in runs],
        }
    defaults = [r["variants"]["default"]["median_ms"] for r in references]
    return {
        "variants": {"default": {"median_ms": statistics.median(defaults)}},
        "savings": savings,
        "failed": sorted({f for r in references for f in r["failed"]}),
        "campaigns": len(references),
    }


def reference_best(options: dict[str, dict[str, Any]]) -> str:
    """The option with the largest saving whose interval is above zero; "keep" when none is."""
    paying = {k: o for k, o in options.items() if o["ci_share"] and o["ci_share"][0] > 0}
    return max(paying, key=lambda k: paying[k]["share"]) if paying else "keep"


def first_right(first: str, reference: dict[str, dict[str, Any]], best: str) -> bool:
    """The advisor's first action is the reference's best, or an option the reference cannot
    tell from it: its mean saving at least the best's lower bound, "keep"'s being exactly 0
    (an option that pays nothing clearly but is not slower on average ties with keeping the
    step as it is). An action that is no option (keep, a break's fix, upstream) is right only
    when no option pays."""
    if first == best or (best == "keep" and first not in reference):
        return True
    if first not in reference:
        return False
    low = 0.0 if best == "keep" else reference[best]["ci_share"][0]
    return reference[first]["share"] >= low


def agreement(advisor: dict[str, Any] | None, reference: dict[str, Any] | None) -> str | None:
    if advisor is None or reference is None:
        return None
    share, ref, ci = advisor["share"], reference["share"], reference["ci_share"]
    if ref and abs(share / ref - 1) <= TOLERANCE:
        return "within 25%"
    if ci and ci[0] <= share <= ci[1]:
        return "inside its interval"
    return "off"


def target_row(name: str, form: str, half: str, advisor_row: dict[str, Any],
               reference: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    meta = {
        "reference_default_ms": reference["variants"]["default"]["median_ms"],
        "failed": reference["failed"],
        "reference_campaigns": reference.get("campaigns", 1),
        "reference_rounds": max(
            (s.get("paired_rounds", 0) for s in reference["savings"].values()), default=0
        ),
    }
    return judged_row(name, form, half, advisor_row, reference_options(reference), meta)


def judged_row(name: str, form: str, half: str, advisor_row: dict[str, Any],
               theirs: dict[str, dict[str, Any]],
               meta: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """One target's row from the advisor's sweep row and the reference's options (shares and
    intervals); `meta` carries the reference's default ms, failures, campaigns and rounds."""
    ours = advisor_options(advisor_row)
    best = reference_best(theirs)
    first = advisor_row["first_action"]
    options = [o for o in OPTIONS[form] if o != form]
    return {
        "name": name,
        "form": form,
        "half": half,
        "reference_default_ms": meta["reference_default_ms"],
        "advisor_default_ms": advisor_row["default_ms"],
        "options": {
            option: {
                "advisor": ours.get(option),
                "reference": theirs.get(option),
                "agrees": agreement(ours.get(option), theirs.get(option)),
            }
            for option in options
        },
        "reference_best": best,
        "first_action": first,
        "first_right": first_right(first, theirs, best),
        "failed": meta["failed"],
        "reference_campaigns": meta["reference_campaigns"],
        "reference_rounds": meta["reference_rounds"],
    }


def rejudged(saved: Path, advisor_path: Path, added: tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    """Each target's row: the advisor's sweep against the reference sides of a saved table
    (`placements_reference.json`), for a new sweep judged against a reference already measured
    (its run folders need not be kept). Options the table lacks are taken from the campaigns
    in `added` (runs folders) that measured them, pooled."""
    advisor = {r["name"]: r for r in json.loads(advisor_path.read_text())["targets"]}
    rows = []
    for old in json.loads(saved.read_text(encoding="utf-8"))["targets"]:
        name = old["name"]
        if name not in advisor:
            print(f"placements_reference: {name}: no advisor row", file=sys.stderr)
            continue
        theirs = {k: o["reference"] for k, o in old["options"].items() if o.get("reference")}
        theirs = {**_added_options(name, added), **theirs}
        meta = {k: old[k] for k in ("reference_default_ms", "failed")}
        meta["reference_campaigns"] = old.get("reference_campaigns", 1)
        meta["reference_rounds"] = old.get("reference_rounds", 0)
        rows.append(judged_row(name, old["form"], old["half"], advisor[name], theirs, meta))
    return rows


def _added_options(name: str, added: tuple[Path, ...]) -> dict[str, dict[str, Any]]:
    found = [d / name / "reference.json" for d in added]
    references = [json.loads(f.read_text(encoding="utf-8")) for f in found if f.is_file()]
    return reference_options(pooled(references)) if references else {}


def halves() -> dict[str, str]:
    from benchmarks.trainzoo.models import HELD_OUT_MODELS, TUNING_MODELS

    return {**dict.fromkeys(TUNING_MODELS, "tuning"), **dict.fromkeys(HELD_OUT_MODELS, "held out")}


def share_text(side: dict[str, Any] | None) -> str:
    """One side's saving (a share of its step) with its 95% interval; "-" when not measured."""
    if side is None:
        return "-"
    ci = side["ci_share"]
    return f"{side['share']:+.1%}" + (f" [{ci[0]:+.1%}, {ci[1]:+.1%}]" if ci else "")


def _cell(option: dict[str, Any]) -> str:
    text = f"{share_text(option['advisor'])} / {share_text(option['reference'])}"
    return text + (f" ({option['agrees']})" if option["agrees"] else "")


def tally(rows: list[dict[str, Any]], half: str | None = None) -> tuple[int, int, int, int]:
    """Over the targets of `half` (None: all): first actions right, targets, placement savings
    agreeing, placement savings compared."""
    part = [r for r in rows if half is None or r["half"] == half]
    compared = [o for r in part for o in r["options"].values() if o["agrees"]]
    right = sum(bool(r["first_right"]) for r in part)
    return right, len(part), sum(o["agrees"] != "off" for o in compared), len(compared)


def summary(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for half in ("tuning", "held out"):
        right, targets, agreed, compared = tally(rows, half)
        lines.append(
            f"- {half}: first action the reference's best (or one it cannot tell from it) on "
            f"{right} of {targets} targets; placement savings agreeing on {agreed} of "
            f"{compared}"
        )
    return lines


def _rounds(row: dict[str, Any]) -> str:
    """The rounds the reference's numbers rest on, and the campaigns pooled for them."""
    rounds, campaigns = row.get("reference_rounds"), row.get("reference_campaigns", 1)
    if not rounds:
        return ""
    return f"{rounds} ({campaigns} campaigns)" if campaigns > 1 else str(rounds)


def render(rows: list[dict[str, Any]]) -> str:
    names = ("eager", "optimizer", "step", "fused", "eager_fused", "module", "split", "allocator")
    shown = [n for n in names if any(n in r["options"] for r in rows)]
    table = [
        [r["name"], r["half"], f"{r['advisor_default_ms']:.3g} / {r['reference_default_ms']:.3g}",
         *[_cell(r["options"][n]) if n in r["options"] else "" for n in shown],
         r["first_action"], r["reference_best"], "yes" if r["first_right"] else "no",
         _rounds(r)]
        for r in rows
    ]  # fmt: skip
    headers = ["target", "half", "default ms (advisor / reference)", *shown,
               "advisor's first", "reference's best", "first right",
               "reference rounds"]  # fmt: skip
    return (
        "# Training placements: the advisor against a hand-written reference\n\n"
        "`python -m benchmarks.placements_reference`: each placement written by hand "
        "(`benchmarks/trainzoo/placed.py`) and measured in fresh processes by "
        "`benchmarks.reference_ab` (rounds outermost, one pinned thread), against the advisor's "
        "sweep in `reports/benchmarks/training_placements/placements.json`. Each cell: the "
        "advisor's saving / the reference's, shares of each one's default step, with 95% "
        "intervals; agreement is within 25% of the reference's share or inside its interval. "
        "A `-` is an option its side did not measure. Where a target's reference was measured "
        "in several campaigns, its rounds are pooled (each campaign's mean is in the JSON).\n\n"
        + "\n".join(summary(rows))
        + "\n\n"
        + tabulate(table, headers, tablefmt="github")
        + "\n"
    )


def judge(runs: Path, advisor_path: Path, also: tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    """Each target's row: the advisor's saved sweep against the reference saved in `runs`,
    pooled with the same target's in each of `also` (earlier campaigns) where it was measured."""
    advisor = {r["name"]: r for r in json.loads(advisor_path.read_text())["targets"]}
    half_of = halves()
    rows = []
    for name, model, form in manifest_targets():
        saved = runs / name / "reference.json"
        if name not in advisor or not saved.is_file():
            print(f"placements_reference: {name}: no advisor row or no {saved}", file=sys.stderr)
            continue
        found = [d / name / "reference.json" for d in also] + [saved]
        references = [json.loads(f.read_text(encoding="utf-8")) for f in found if f.is_file()]
        row = target_row(name, form, half_of.get(model, "?"), advisor[name], pooled(references))
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=RUNS)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--advisor", type=Path, default=ADVISOR)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--judge-only", action="store_true")
    parser.add_argument("--only", action="append", default=[], help="a target (repeatable)")
    parser.add_argument(
        "--option", action="append", default=[],
        choices=sorted({o for options in OPTIONS.values() for o in options}),
        help="measure only this option beside the baseline (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--also", action="append", type=Path, default=[],
        help="an earlier campaign's runs folder, its rounds pooled with --runs (repeatable); "
        "with --reference, a campaign of options the saved table lacks",
    )  # fmt: skip
    parser.add_argument(
        "--reference", type=Path,
        help="a saved placements_reference.json: judge --advisor against its reference sides "
        "(nothing measured, --runs unused)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.reference is None and not args.judge_only:
        only = tuple(args.option)
        for name, model, form in manifest_targets():
            if not args.only or name in args.only:
                measure(name, model, form, args.runs, args.rounds, args.seconds, only)
    try:
        rows = (
            rejudged(args.reference, args.advisor, tuple(args.also))
            if args.reference is not None
            else judge(args.runs, args.advisor, tuple(args.also))
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"placements_reference: cannot read a saved result: {exc}", file=sys.stderr)
        return 2
    if not rows:
        return 2
    write_study(args.out, "placements_reference", {"targets": rows}, render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

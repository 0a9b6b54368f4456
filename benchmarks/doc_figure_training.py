"""Figures docs/training.md and docs/accuracy.md quote from the fixed-variant studies
(reports/benchmarks/train_fixed/, reports/benchmarks/scenarios_fixed/) and the placements
reference (reports/benchmarks/placements_reference/; nothing here measures). The placements
are counted by the study's own `tally`, so a figure and the study's summary cannot count
apart."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.doc_figure_base import Figure, of
from benchmarks.placements_reference import share_text, tally

TRAIN_FIXED = "reports/benchmarks/train_fixed/train_fixed.json"
SCENARIOS_FIXED = "reports/benchmarks/scenarios_fixed/scenarios_fixed.json"
# the accuracy target counts the cases whose saving is at least this share of the step
LARGE_SHARE = 0.10
PLACEMENTS_DIR = "reports/benchmarks/placements_reference"
# Each scoring of the advisor's placements against the reference, by figure prefix: the latest
# sweep (each wave timed until its medians settle, no finer than the run-level spread), and it
# against a reference with a third allocator campaign pooled in; the same code with the ±2%
# target alone, and it against the third campaign; the sweep before it (the budget split
# between the waves, settling up to 16 processes), its rerun with the same code, and it against
# the third allocator campaign too; the sweep before it (the allocator arm, two
# settling waves); the one before (10 targets, "split" the model compiled in place, with the
# settling waves) against the reference pooled over the two campaigns that measured a target with
# every arm; the sweep before it (judged with a 2.5% run-level spread, no settling waves); the first
# sweep with warm blocks, judged with a 3% run-level spread (its run folders are gone); the same
# code an hour before it with its blocks timed cold; the sweep before them against the same
# reference, scored by the same rule (an option ties with "keep" when not slower on average); then,
# scored as they were (no tie with "keep"): that sweep against its own campaign's reference alone;
# the sweep before it (7 targets) against its own reference and against the pooled one; the runs
# before the newer arms (8 rounds) and the first reference run (4 rounds).
# The first action's rate over the reruns of one rule (benchmarks/first_action_rate.py): the
# latest full sweep and the kornia CNN's two targets swept again twice with the same code; and
# the same runs against the reference with the third allocator campaign pooled in; the kornia
# CNN's targets scored against a reference measured the same hour (`--supersede`); kornia_cnn.step
# against the powered reference of its contenders; and every sweep of the rule, each target
# against the last reference that scored it (`LABEL@REFERENCE`).
FIRST_RATES = {
    "first_rate": f"{PLACEMENTS_DIR}/reruns/first_action_rate.json",
    "first_rate_alloc3": f"{PLACEMENTS_DIR}/reruns/with_campaign3/first_action_rate.json",
    "first_rate_same_hour": f"{PLACEMENTS_DIR}/reruns/same_hour/first_action_rate.json",
    "first_rate_powered": f"{PLACEMENTS_DIR}/reruns/powered/first_action_rate.json",
    "first_rate_over_sweeps": f"{PLACEMENTS_DIR}/reruns/powered/over_sweeps/first_action_rate.json",
}
# Saved sweeps judged again, each target alone, in pairs of runs and all its runs together
# (`advisor judge RUN RUN ...`), against its last reference (benchmarks/pooled_runs.py).
POOLED = f"{PLACEMENTS_DIR}/reruns/pooled/pooled_runs.json"
# kornia_cnn.step against the powered reference (its contenders at 40 rounds, not pooled).
POWERED = f"{PLACEMENTS_DIR}/reruns/powered/kornia_C/placements_reference.json"
# The four kornia sweeps of that rule, each against the same-hour reference (kornia targets only).
KORNIA_ON_SAME_HOUR = f"{PLACEMENTS_DIR}/reruns/same_hour/earlier_sweeps/first_action_rate.json"
PLACEMENTS = {
    "placements_ref": "",
    "placements_ref_target2": "settle_target2/",
    "placements_ref_target2_alloc3": "allocator_reference/target2_with_campaign3/",
    "placements_ref_split": "split_budget/",
    "placements_ref_latest_alloc3": "allocator_reference/latest_with_campaign3/",
    "placements_ref_rerun": "rerun_sweep/",
    "placements_ref_alloc": "allocator_sweep/",
    "placements_ref_alloc3": "allocator_reference/with_campaign3/",
    "placements_ref_settle": "settle_waves/",
    "placements_ref_warm2": "warm_second/",
    "placements_ref_warm1": "warm_first/",
    "placements_ref_cold": "cold_blocks/",
    "placements_ref_prev": "previous_sweep/",
    "placements_ref_alone": "own_reference/",
    "placements_ref7": "seven_targets/",
    "placements_ref7_pooled": "seven_targets_pooled/",
    "placements_ref8": "before_new_arms/",
    "placements_ref4": "rounds4/",
}


def _fixed_agreed(data: dict[str, Any]) -> str:
    rows = data["scenarios"]
    return of(sum(bool(r["within"] or r["inside"]) for r in rows), len(rows))


def _fixed_within(data: dict[str, Any]) -> str:
    rows = data["scenarios"]
    return of(sum(bool(r["within"]) for r in rows), len(rows))


def _large(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cases where the advisor's or the reference's saving is >= LARGE_SHARE of the step."""
    return [
        r
        for r in rows
        if max(abs(r["projected_share"] or 0.0), abs(r["reference_share"] or 0.0)) >= LARGE_SHARE
    ]


def _large_agreed(data: dict[str, Any]) -> str:
    rows = _large(data["scenarios"])
    return of(sum(bool(r["within"] or r["inside"]) for r in rows), len(rows))


def _large_worst(data: dict[str, Any]) -> str:
    rows = [r for r in _large(data["scenarios"]) if r["error_share"] is not None]
    worst = max(rows, key=lambda r: abs(r["error_share"]))
    return f"{worst['error_share']:+.0%} ({worst['name']})"


def _reference_share(name: str) -> Callable[[Any], str]:
    def make(data: dict[str, Any]) -> str:
        row = next(r for r in data["scenarios"] if r["name"] == name)
        return f"{row['reference_share']:+.1%} vs {row['projected_share']:+.1%}"

    return make


def _first_actions(data: dict[str, Any]) -> str:
    kinds = [r["first_action"] or "none" for r in data["scenarios"]]
    return ", ".join(f"{kind} {kinds.count(kind)}" for kind in sorted(set(kinds)))


def _first_right(half: str) -> Callable[[Any], str]:
    def make(data: dict[str, Any]) -> str:
        right, targets, _, _ = tally(data["targets"], half)
        return of(right, targets)

    return make


def _placements_agreed(data: dict[str, Any]) -> str:
    _, _, agreed, compared = tally(data["targets"])
    return of(agreed, compared)


def _rate(half: str) -> Callable[[Any], str]:
    def make(data: dict[str, Any]) -> str:
        return f"{data['halves'][half]:.0%}"

    return make


def _reference_option(name: str, option: str) -> Callable[[Any], str]:
    """The reference's saving for one option of one target, with its 95% interval, as the
    study's table writes it."""

    def make(data: dict[str, Any]) -> str:
        row = next(r for r in data["targets"] if r["name"] == name)
        return share_text(row["options"][option]["reference"])

    return make


def _target_right(name: str) -> Callable[[Any], str]:
    def make(data: dict[str, Any]) -> str:
        row = next(r for r in data["targets"] if r["name"] == name)
        return of(sum(row["right"]), len(row["right"]))

    return make


def _pooled_rate(way: str, half: str) -> Callable[[Any], str]:
    def make(data: dict[str, Any]) -> str:
        return f"{data['halves'][way][half]:.0%}"

    return make


def _pooled_right(name: str, way: str) -> Callable[[Any], str]:
    def make(data: dict[str, Any]) -> str:
        judged = next(r for r in data["targets"] if r["name"] == name)[way]
        return of(sum(j["right"] for j in judged), len(judged))

    return make


def _pooled_figures() -> dict[str, Figure]:
    halves = (("tuning", "tuning"), ("heldout", "held out"), ("all", "all"))
    rates = {
        f"pooled.{way}_{short}": Figure(POOLED, _pooled_rate(way, half))
        for way in ("alone", "pairs", "all")
        for short, half in halves
    }
    return rates | {
        f"pooled.kornia_step_{way}": Figure(POOLED, _pooled_right("kornia_cnn.step", way))
        for way in ("alone", "pairs", "all")
    }


def figures() -> dict[str, Figure]:
    return {
        "train_fixed.agreed": Figure(TRAIN_FIXED, _fixed_agreed),
        "train_fixed.within": Figure(TRAIN_FIXED, _fixed_within),
        "train_fixed.mask": Figure(TRAIN_FIXED, _reference_share("train_mask")),
        "train_fixed.first_actions": Figure(TRAIN_FIXED, _first_actions),
        "scenarios_fixed.agreed": Figure(SCENARIOS_FIXED, _fixed_agreed),
        "scenarios_fixed.within": Figure(SCENARIOS_FIXED, _fixed_within),
        "scenarios_fixed.large_agreed": Figure(SCENARIOS_FIXED, _large_agreed),
        "scenarios_fixed.large_worst": Figure(SCENARIOS_FIXED, _large_worst),
        **{
            f"{prefix}.{name}": Figure(source, make)
            for prefix, source in FIRST_RATES.items()
            for name, make in (
                ("tuning", _rate("tuning")),
                ("heldout", _rate("held out")),
                ("all", _rate("all")),
                ("kornia_module", _target_right("kornia_cnn.module")),
                ("kornia_step", _target_right("kornia_cnn.step")),
            )
        },
        **_pooled_figures(),
        **{
            f"powered_ref.{option}": Figure(POWERED, _reference_option("kornia_cnn.step", option))
            for option in ("module", "split", "allocator")
        },
        **{
            f"kornia_same_hour_ref.{form}": Figure(
                KORNIA_ON_SAME_HOUR, _target_right(f"kornia_cnn.{form}")
            )
            for form in ("module", "step")
        },
        **{
            f"{prefix}.{name}": Figure(f"{PLACEMENTS_DIR}/{folder}placements_reference.json", make)
            for prefix, folder in PLACEMENTS.items()
            for name, make in (
                ("tuning_right", _first_right("tuning")),
                ("heldout_right", _first_right("held out")),
                ("agreed", _placements_agreed),
            )
        },
    }

"""reruns.md from reruns.json (`benchmarks.reruns`): the summary and one row per target."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

MIN_STEP_SHARE = 0.10
TITLE = "Reruns: the same target, three runs, and an independent reference"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"


def _interval(ci: list[float] | None) -> str:
    return "-" if not ci else f"[{_pct(ci[0])}, {_pct(ci[1])}]"


def _count(items: list[bool]) -> str:
    return f"{sum(items)} of {len(items)}" + (f" ({sum(items) / len(items):.0%})" if items else "")


def checked(chosen: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(target, check) of each run's first action with an independent reference, where the
    saving or the reference's is at least MIN_STEP_SHARE of the step."""
    return [
        (t["name"], c)
        for t in chosen
        for c in t["reference_checks"]
        if (t["reference"] or {}).get("mean_share") is not None
        and max(abs(c["share"]), abs(t["reference"]["mean_share"])) >= MIN_STEP_SHARE
    ]


def worst_error(checks: list[tuple[str, dict[str, Any]]], named: bool = True) -> str:
    """The largest error of a first action against its reference, with its target (`named`)."""
    errors = [(abs(c["error"]), name) for name, c in checks if c["error"] is not None]
    if not errors:
        return "-"
    error, name = max(errors)
    return f"{error:.0%}" + (f" ({name})" if named else "")


def agrees(check: dict[str, Any]) -> bool:
    return bool(check["within"] or check["inside"])


def _reference_line(chosen: list[dict[str, Any]]) -> str:
    checks = checked(chosen)
    if not checks:
        return "- no first action with an independent reference and a saving >= 10% of the step"
    agree = [agrees(c) for _, c in checks]
    off = [(name, c) for name, c in checks if not agrees(c)]
    return (
        f"- first action's saving against the independent reference (savings >= "
        f"{MIN_STEP_SHARE:.0%} of the step), within 25% or inside the reference's interval: "
        f"{_count(agree)} runs; worst error {worst_error(checks)}; worst of the runs that do "
        f"not agree {worst_error(off)}"
    )


def summary_lines(targets: dict[str, Any], half: tuple[str, ...] | None = None) -> list[str]:
    chosen = [t for t in targets.values() if half is None or t["half"] in half]
    lines = [_reference_line(chosen)]
    if not any(t["runs"] > 1 for t in chosen):
        return lines  # one run each: nothing to compare between runs
    same = [t["same_first"] for t in chosen if t["runs"] > 1]
    pairs = [c for t in chosen for c in t["coverage"]]
    return [
        f"- same first action in every run: {_count(same)} targets",
        f"- a run's 95% interval covers another run's saving (share of its own default): "
        f"{_count([c['covered'] for c in pairs])} ordered pairs; the interval of its waves "
        f"alone (no run-level spread): {_count([c['covered_by_waves'] for c in pairs])}",
        *lines,
    ]


def _first_cell(t: dict[str, Any]) -> str:
    shares = []
    for measured in t["actions"]:
        saving = measured.get(t["first"])
        shares.append("-" if saving is None else
                      f"{_pct(saving['share'])} {_interval(saving['ci_share'])}")  # fmt: skip
    return "; ".join(shares)


def _reference_cell(t: dict[str, Any]) -> str:
    ref = t["reference"]
    if not ref:
        return "no independent form"
    if ref.get("mean_share") is None:
        return "failed"
    return f"{_pct(ref['mean_share'])} {_interval(ref.get('ci95_share'))}"


def _checks_cell(t: dict[str, Any]) -> str:
    marks = []
    for c in t["reference_checks"]:
        if c["within"] is None:
            marks.append("-")
        else:
            marks.append("yes" if c["within"] or c["inside"] else f"NO ({_pct(c['error'])})")
    return ", ".join(marks) or "-"


def table(targets: dict[str, Any]) -> str:
    rows = []
    for t in targets.values():
        covered = [c["covered"] for c in t["coverage"]]
        ms = ", ".join("-" if v is None else f"{v:.3g}" for v in t["default_ms"])
        rows.append([
            t["set"], t["name"], t["half"], ms, " / ".join(t["first_actions"]),
            _first_cell(t), _reference_cell(t), _checks_cell(t),
            f"{sum(covered)}/{len(covered)}",
        ])  # fmt: skip
    headers = ["set", "target", "half", "default ms (runs)", "first action (runs)",
               "its saving, share of default [95% CI] (runs)", "reference share [95% CI]",
               "agrees with reference", "intervals covering"]  # fmt: skip
    return tabulate(rows, headers, tablefmt="github")


def _spread_line(result: dict[str, Any]) -> list[str]:
    spread = result.get("share_spread") or {}
    first = result.get("first_call_spread") or {}
    lines = []
    if spread.get("run_sd") is not None:  # 0.0 is a measured spread, shown as such
        lines.append(
            f"- a saving's share moves from run to run by a standard deviation of "
            f"{spread['run_sd']:.1%} of the step beyond what each run's waves show "
            f"({spread['pairs']} pairs of runs of one action)"
        )
    if first.get("log_sd") is not None:
        lines.append(
            f"- an action's first call (compile) moves from run to run by a standard deviation "
            f"of {first['log_sd']:.1%} on the log scale ({first['actions']} actions)"
        )
    return lines


def render(result: dict[str, Any]) -> str:
    targets = result["targets"]
    options = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in result["options"].items())
    return "\n".join([
        f"# {result.get('title', TITLE)}",
        "",
        f"`{result.get('command', 'python -m benchmarks.reruns')}` (`advisor run` with {options}, "
        f"the replicated "
        f"protocol; references by `benchmarks.reference_ab`). {result['machine']}.",
        "",
        "Every target:", *summary_lines(targets), *_spread_line(result), "",
        "Tuning half:", *summary_lines(targets, ("tuning", "-")), "",
        "Held-out half:", *summary_lines(targets, ("held-out",)), "",
        table(targets), "",
    ])  # fmt: skip

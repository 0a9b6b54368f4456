"""Markdown for the accuracy benchmark (benchmarks/accuracy.py): one table per validation set,
the tuning and held-out halves apart, raw and share errors side by side."""

from __future__ import annotations

import platform
import time
from collections.abc import Sequence
from typing import Any

from tabulate import tabulate

from advisor.core.model import Settings
from benchmarks.accuracy_cases import NOISE_FACTOR, TOLERANCE, Case
from benchmarks.accuracy_kbreaks import KBREAKS_TOLERANCE

WORST_ALLOWED = 0.50  # no checked case off by more than this
SHARE_REQUIRED = 0.80  # of the checked cases within TOLERANCE


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.0%}"


def _table(rows: list[list[Any]], headers: list[str]) -> str:
    return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)


def environment_line(load: tuple[float, ...], wall_s: float, settings: Settings) -> str:
    import torch

    from advisor.measure.environment import cpu_name

    return (
        f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {cpu_name()}, torch {torch.__version__}, "
        f"Python {platform.python_version()}; {settings.threads} torch thread(s), "
        f"{settings.repeats} repeats, {settings.budget_s:g} s budget per mode; load average at "
        f"start {', '.join(f'{v:.2f}' for v in load) or '-'}; wall time {wall_s / 60:.1f} min."
    )


def _within(case: Case) -> str:
    if case.status != "ok":
        return "-"
    if case.within is None:
        if case.measured_ms is None:
            return "n/a (not measured)"
        return "n/a (within noise)"
    return "yes" if case.within else "NO"


def _first(case: Case) -> str:
    if case.first_action_ok is None:
        return case.first_action or "-"
    mark = "right" if case.first_action_ok else f"WRONG: {case.first_action_why}"
    return f"{case.first_action}: {mark}"


def case_table(cases: Sequence[Case]) -> str:
    training = any(c.passes for c in cases)
    rows = [
        [
            c.name,
            c.half,
            c.status if c.status == "ok" else c.status[:70],
            c.reference,
            _ms(c.default_ms),
            _ms(c.projected_ms),
            _measured(c),
            _ms(c.noise_ms),
            _pct(c.error),
            _pct(c.error_share),
            _within(c),
            _first(c)
            if c.verdict_ok is None
            else f"{_first(c)}; verdict " + ("right" if c.verdict_ok else "WRONG"),
            c.notes,
        ]
        + ([c.passes or "-", _share_text(c.breaks_share)] if training else [])
        for c in cases
    ]
    headers = [
        "case",
        "half",
        "status",
        "reference",
        "default ms",
        "projected ms",
        "measured ms [95% CI]",
        "noise ms",
        "error (raw ms)",
        "error (shares)",
        f"within {TOLERANCE:.0%}",
        "first action",
        "notes",
    ] + (["passes ms (default)", "breaks' share"] if training else [])
    return _table(rows, headers)


def _share_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _measured(case: Case) -> str:
    if case.measured_ms is None:
        return "-"
    if case.measured_ci_ms is None:
        return _ms(case.measured_ms)
    low, high = case.measured_ci_ms
    return f"{case.measured_ms:.4f} [{low:.4f}, {high:.4f}]"


def summary_line(label: str, cases: Sequence[Case]) -> str:
    """Counts over the cases that ran: checked, within the tolerance, the worst error, and
    first actions right."""
    ran = [c for c in cases if c.status == "ok"]
    checked = [c for c in ran if c.within is not None]
    within = sum(bool(c.within) for c in checked)
    worst = max(checked, key=lambda c: abs(c.error or 0.0), default=None)
    judged = [c for c in ran if c.first_action_ok is not None]
    right = sum(bool(c.first_action_ok) for c in judged)
    worst_text = f"worst {worst.name} {_pct(worst.error)}" if worst else "no worst case"
    shares = [c for c in ran if c.within_share is not None]
    on_shares = sum(bool(c.within_share) for c in shares)
    return (
        f"{label}: {len(ran)}/{len(cases)} ran; projected within {TOLERANCE:.0%} (raw ms) on "
        f"{within}/{len(checked)} checked ({_share(within, len(checked))}); {worst_text}; "
        f"on shares {on_shares}/{len(shares)}; first action right on {right}/{len(judged)}."
    )


def _share(count: int, total: int) -> str:
    return f"{count / total:.0%}" if total else "-"


def target_met(cases: Sequence[Case], on_shares: bool = False) -> tuple[bool, str]:
    """The target on raw ms, or on shares of each run's own default median."""
    error = (lambda c: c.error_share) if on_shares else (lambda c: c.error)
    checked = [c for c in cases if c.status == "ok" and c.checked and error(c) is not None]
    if not checked:
        return False, "no case had a measured saving above its noise"
    errors = [abs(error(c) or 0.0) for c in checked]
    within = sum(e <= TOLERANCE for e in errors) / len(checked)
    worst = max(errors)
    met = within >= SHARE_REQUIRED and worst <= WORST_ALLOWED
    return met, (
        f"{within:.0%} of {len(checked)} checked cases within {TOLERANCE:.0%} (target "
        f"{SHARE_REQUIRED:.0%}); worst error {worst:.0%} (target at most {WORST_ALLOWED:.0%})"
    )


def set_section(name: str, cases: Sequence[Case]) -> list[str]:
    out = [f"## {name}", "", case_table(cases), ""]
    halves = sorted({c.half for c in cases} - {"-"})
    for half in halves:
        out.append("- " + summary_line(half, [c for c in cases if c.half == half]))
    out += ["- " + summary_line("all", cases), ""]
    return out


def kbreaks_section(kb: dict[str, Any]) -> list[str]:
    if kb.get("error") is None:
        return ["The cost model gave no per-break overhead."]
    rows = [
        [
            i + 1,
            " / ".join(f"{v:.1f}" for v in r["k_values"].values()),
            f"{r['slope_us_per_break']:.2f}",
            r["breaks_found"],
            f"{r['model_us_per_break']:.2f}",
            f"{r['model_run_call_us']:.1f}",
            f"{r['model_rescaled_us']:.2f}",
            _pct(r["raw_error"]),
            _pct(r["error"]),
        ]
        for i, r in enumerate(kb["pairs"])
    ]
    headers = [
        "pair",
        "slope run µs/call by k",
        "slope µs/break",
        "breaks found",
        "model µs/break",
        f"model run k={kb['k']} call µs",
        "model rescaled µs/break",
        "error (raw µs)",
        "error (rescaled)",
    ]
    return [
        f"{len(kb['pairs'])} back-to-back pairs of (unprofiled slope over k; advisor run on "
        f"k={kb['k']}). Model: the mean overhead part of the k entries.",
        "",
        _table(rows, headers),
        "",
        f"Median error: raw µs {_pct(kb['raw_error'])}, rescaled {_pct(kb['error'])} "
        f"(target {KBREAKS_TOLERANCE:.0%}).",
    ]


HOW = (
    "Projected: the advisor's saving (scenarios and training: for the kind of fix the fixed "
    "variant applies; models: the first action's saving; upstream: every fix). Measured: the "
    "reference saving (the fixed variant, the first action compiled afresh, or the new release), "
    "timed interleaved against the default mode right after the advisor's run. Error (raw ms) "
    "= projected / measured - 1; error (shares) compares each as a share of its own run's "
    "default median. A case is checked where the measured saving is resolved: its 95% "
    f"interval lies above zero (without an interval: it exceeds {NOISE_FACTOR:g}x the timing "
    f"spread). Target: within {TOLERANCE:.0%} (raw ms) on at least {SHARE_REQUIRED:.0%} of the "
    f"checked cases, none off by more than {WORST_ALLOWED:.0%}."
)


def render(cases: Sequence[Case], kb: dict[str, Any] | None, environment: str) -> str:
    out = ["# Accuracy benchmark", "", environment, "", HOW, ""]
    if cases:
        for label, on_shares in (("raw ms", False), ("shares of each run's median", True)):
            met, why = target_met(cases, on_shares)
            out += [f"**Target on {label} {'met' if met else 'NOT met'}**: {why}.", ""]
        out += ["- " + summary_line(half, [c for c in cases if c.half == half])
                for half in ("tuning", "held-out")]  # fmt: skip
        out += ["- " + summary_line("every case", cases), ""]
    for name in dict.fromkeys(c.set for c in cases):
        out += set_section(name, [c for c in cases if c.set == name])
    if kb is not None:
        out += ["## Per-break overhead against the k-breaks micro-benchmark", ""]
        out += kbreaks_section(kb)
    return "\n".join(out) + "\n"

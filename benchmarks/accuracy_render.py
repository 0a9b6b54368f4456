"""Markdown for the accuracy benchmark (benchmarks/accuracy.py): tables from its rows."""

from __future__ import annotations

import platform
import time
from typing import Any

from tabulate import tabulate

from benchmarks.accuracy import KBREAKS_TOLERANCE, NOISE_FACTOR, TOLERANCE, ModelRow, ScenarioRow


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.0%}"


def _table(rows: list[list[Any]], headers: list[str]) -> str:
    return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)


def environment_line(load: tuple[float, ...], wall_s: float) -> str:
    import torch

    from advisor.measure.environment import cpu_name

    return (
        f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {cpu_name()}, "
        f"torch {torch.__version__}, Python {platform.python_version()}; load average at start "
        f"{', '.join(f'{v:.2f}' for v in load) or '-'}; wall time {wall_s / 60:.1f} min."
    )


def scenario_table(rows: list[ScenarioRow]) -> str:
    body = [
        [
            r.scenario,
            r.fix_kind or "-",
            r.expected,
            r.verdict or "-",
            "yes" if r.verdict_ok else "NO",
            _ms(r.estimated_ms),
            f"{_ms(r.fixed_saving_ms)} [{r.fixed_ci_ms[0]:.4f}, {r.fixed_ci_ms[1]:.4f}]",
            _pct(r.error_ms),
            _pct(r.error_share),
            f"{r.drift:.2f}" if r.drift is not None else "-",
            {True: "yes", False: "NO", None: f"n/a (below {NOISE_FACTOR:g}x noise)"}[r.ok],
        ]
        for r in rows
    ]
    headers = [
        "scenario",
        "fix",
        "expected",
        "advisor",
        "ok",
        "estimated ms",
        "fixed saving ms [95% CI]",
        "error (ms)",
        "error (shares)",
        "drift",
        f"within {TOLERANCE:.0%}",
    ]
    return _table(body, headers)


def scenario_parts_table(rows: list[ScenarioRow]) -> str:
    body = []
    for r in rows:
        for e in r.entries:
            s = e["savings"]
            body.append(
                [
                    r.scenario,
                    e["id"],
                    e["code"],
                    e["line"],
                    f"{e['occurrences']:g}",
                    _ms(e["overhead_ms"]),
                    _ms(e["tensor_work_ms"]),
                    _ms(e["kept_ms"]),
                    _ms(e["python_work_ms"]),
                    _ms(s["isolate"]),
                    _ms(s["rewrite"]),
                    _ms(s["delete"]),
                    e["verdict"],
                    e["basis"],
                ]
            )
    headers = [
        "scenario",
        "entry",
        "code",
        "line",
        "per call",
        "overhead",
        "tensor",
        "kept",
        "python",
        "isolate saves",
        "rewrite saves",
        "delete saves",
        "verdict",
        "basis",
    ]
    return _table(body, headers)


def model_table(rows: list[ModelRow]) -> str:
    body = [
        [
            r.model,
            r.status if r.status != "ok" else "ok",
            _ms(r.eager_ms),
            _ms(r.default_ms),
            str(r.entries),
            f"{r.sum_of_shares:.1%}" if r.sum_of_shares is not None else "-",
            _ms(r.projected_saving_ms),
            _ms(r.measured_saving_ms)
            + (
                f" [{r.measured_ci_ms[0]:.4f}, {r.measured_ci_ms[1]:.4f}]"
                if r.measured_ci_ms
                else ""
            ),
            r.measured_by or "-",
            _pct(r.error),
            (r.top_action or "-")[:70],
        ]
        for r in rows
    ]
    headers = [
        "model",
        "status",
        "eager ms",
        "default ms",
        "entries",
        "sum of shares",
        "projected saving ms",
        "measured all-fixed saving ms [95% CI]",
        "measured by",
        "error",
        "top action",
    ]
    return _table(body, headers)


def kbreaks_section(kb: dict[str, Any]) -> list[str]:
    if kb is None or kb.get("error") is None:
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
    k = kb["k"]
    return [
        f"{len(kb['pairs'])} back-to-back pairs of (unprofiled slope over k = "
        f"{', '.join(kb['pairs'][0]['k_values'])}; advisor run on k={k}). Model: the mean "
        "overhead part of the k entries (what any fix of a break removes).",
        "",
        _table(
            rows,
            [
                "pair",
                "slope run µs/call by k",
                "slope µs/break",
                "breaks found",
                "model µs/break",
                f"model run k={k} call µs",
                "model rescaled µs/break",
                "error (raw µs)",
                "error (rescaled)",
            ],
        ),
        "",
        f"Median error: raw µs {_pct(kb['raw_error'])}, rescaled {_pct(kb['error'])} "
        f"(target {KBREAKS_TOLERANCE:.0%}).",
    ]


def _model_summary(rows: list[ModelRow], half: str) -> str:
    mine = [r for r in rows if r.half == half]
    ok = [r for r in mine if r.status == "ok"]
    measured = [r for r in ok if r.error is not None]
    within = sum(abs(r.error) <= TOLERANCE for r in measured if r.error is not None)
    above = [r.model for r in ok if (r.sum_of_shares or 0.0) > 1.0 + 1e-9]
    return (
        f"{half}: {len(ok)}/{len(mine)} models ran; projected within {TOLERANCE:.0%} of the "
        f"measured all-fixed saving on {within}/{len(measured)} with a measurement; sum of "
        f"shares above 100% on {len(above)} ({', '.join(above) or 'none'})."
    )


def render(
    scenarios: list[ScenarioRow],
    models: list[ModelRow],
    kb: dict[str, Any] | None,
    environment: str,
) -> str:
    out = ["# Accuracy benchmark", "", environment, ""]
    if scenarios:
        n_ok = sum(r.verdict_ok for r in scenarios)
        checked = [r for r in scenarios if r.checked]
        out += [
            "## Scenarios against their fixed variants",
            "",
            "Estimated = the advisor's saving for the kind of fix the fixed variant applies "
            "(`FIX_KIND`), summed over its entries. Fixed saving = median(workload) - "
            "median(fixed), default torch.compile, timed interleaved in one process right after "
            "the advisor's run. Error (ms) compares the two raw; error (shares) compares each as "
            "a share of its own run's median; drift = the A/B's workload median over the "
            f"advisor run's default median. Target: within {TOLERANCE:.0%} where the saving "
            f"exceeds {NOISE_FACTOR:g}x the noise (the larger IQR of the two).",
            "",
            scenario_table(scenarios),
            "",
            f"Verdicts right: {n_ok}/{len(scenarios)}. Estimates within {TOLERANCE:.0%} (raw "
            f"ms) where checked: {sum(bool(r.ok) for r in checked)}/{len(checked)}.",
            "",
            "### Cost parts and savings per entry",
            "",
            scenario_parts_table(scenarios),
        ]
    if models:
        out += ["", "## Real models (random-init, benchmarks/zoo)", ""]
        for half in ("tuning", "held-out"):
            out += [f"### {half}", "", model_table([r for r in models if r.half == half]), ""]
        out += [_model_summary(models, "tuning"), "", _model_summary(models, "held-out")]
    if kb is not None:
        out += ["", "## Per-break overhead against the k-breaks micro-benchmark", ""]
        out += kbreaks_section(kb)
    return "\n".join(out) + "\n"

"""Rendering of a before/after comparison."""

from __future__ import annotations

from tabulate import tabulate

from advisor.core.stats import EPOCHS
from advisor.gate.compare import MACHINE_METHOD, RELATIVE_SUFFIX, BreakDelta, Comparison, ModeDelta
from advisor.render.notes import note_text
from advisor.render.view import MODE_LABELS, fmt_ms


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _verdict(d: ModeDelta, comparison: Comparison) -> str:
    """The verdict, and for a change that is not significant the test it failed."""
    why = {
        "p": f"p >= {comparison.alpha:g}",
        "interval": "interval includes no change",
        "min_effect": f"below the {_pct(comparison.min_effect)} minimum effect",
        "noise": f"within the between-run noise (±{_pct(d.noise)})",
    }.get(d.reason)
    return f"{d.verdict} ({why})" if why else d.verdict


def _times_eager(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}× eager"


def _label(mode: str) -> str:
    if mode.endswith(RELATIVE_SUFFIX):
        base = mode.removesuffix(RELATIVE_SUFFIX)
        return f"{MODE_LABELS.get(base, base)} relative to eager"
    return MODE_LABELS.get(mode, mode)


def _rows(comparison: Comparison) -> list[list[str]]:
    rows = []
    for d in comparison.modes:
        change = f"{(d.ratio - 1) * 100:+.1f}%" if d.ratio is not None else "-"
        ci = (
            f"[{(d.ci_low - 1) * 100:+.1f}%, {(d.ci_high - 1) * 100:+.1f}%]"
            if d.ci_low is not None and d.ci_high is not None
            else "-"
        )
        relative = d.mode.endswith(RELATIVE_SUFFIX)
        shown = _times_eager if relative else fmt_ms
        rows.append(
            [
                _label(d.mode),
                shown(d.before_ms),
                shown(d.after_ms),
                change,
                ci,
                f"{d.p_value:.3g}" if d.p_value is not None else "-",
                f"±{_pct(d.noise)}" if d.noise is not None else "-",
                f"{d.before_n}/{d.after_n}",
                _verdict(d, comparison),
            ]
        )
    return rows


_HEADERS = [
    "mode",
    "before ms",
    "after ms",
    "change",
    "95% CI",
    "p",
    "run-to-run noise",
    "n",
    "verdict",
]


def rule(comparison: Comparison) -> str:
    """The significance rule, with this comparison's thresholds."""
    level = f"{(1 - comparison.alpha) * 100:g}%"
    if any(d.method != "samples" for d in comparison.modes if d.ratio is not None):
        machine = any(d.method == MACHINE_METHOD for d in comparison.modes)
        eager_spread, compiled_spread = comparison.run_spreads
        test = (
            f"Welch's t-test on the runs' log process medians gives p < {comparison.alpha:g} "
            "(replicated runs: one value per process"
            + (", each over the machine reference timed beside it" if machine else "")
            + f"; a run's own spread, {eager_spread:.1%} for eager and "
            f"{compiled_spread:.1%} for a compiled mode, added to each side), its "
            f"{level} interval of the ratio excludes no change"
        )
        return (
            f"A change is significant when {test}, and the change is larger than the minimum "
            f"effect ({_pct(comparison.min_effect)}, --min-effect)."
        )
    test = (
        f"the Mann-Whitney U test gives p < {comparison.alpha:g}, the bootstrap {level} "
        "confidence interval of the ratio of medians excludes no change"
    )
    return (
        f"A change is significant when {test}, and the change is larger than both the minimum "
        f"effect ({_pct(comparison.min_effect)}, --min-effect) and the run-to-run noise: the "
        f"root sum of squares of each run's drift, the range of the medians of its samples "
        f"split into {EPOCHS} consecutive epochs (two runs differ by more than the noise "
        "inside each)."
    )


def _break_rows(comparison: Comparison) -> list[list[str]]:
    return [
        [
            b.status,
            b.identity.registry_code,
            _where(b),
            fmt_ms(b.before_cost_ms),
            fmt_ms(b.after_cost_ms),
        ]
        for b in comparison.breaks
    ]


def _where(delta: BreakDelta) -> str:
    """file:line, and where a kept break was before when it moved."""
    now = f"{delta.identity.file}:{delta.identity.line}"
    was = delta.moved_from
    if was is None:
        return now
    return f"{now} (was {was.file}:{was.line})"


_BREAK_HEADERS = ["break", "code", "where", "cost before ms", "cost after ms"]


def render_compare_text(comparison: Comparison) -> str:
    out = [
        f"before: {comparison.before.name} ({comparison.before.target})",
        f"after:  {comparison.after.name} ({comparison.after.target})",
        "",
        tabulate(_rows(comparison), headers=_HEADERS),
    ]
    if comparison.breaks:
        out += ["", tabulate(_break_rows(comparison), headers=_BREAK_HEADERS)]
    out += [f"warning: {note_text(w)}" for w in comparison.warnings]
    out.append("\n" + rule(comparison))
    return "\n".join(out)


def render_compare_markdown(comparison: Comparison) -> str:
    out = [
        "# advisor comparison",
        "",
        f"- before: `{comparison.before.target}` ({comparison.before.name})",
        f"- after: `{comparison.after.target}` ({comparison.after.name})",
        "",
        "## Latency",
        "",
        tabulate(_rows(comparison), headers=_HEADERS, tablefmt="github"),
        "",
        rule(comparison),
    ]
    if comparison.breaks:
        out += [
            "",
            "## Graph breaks",
            "",
            tabulate(_break_rows(comparison), headers=_BREAK_HEADERS, tablefmt="github"),
        ]
    if comparison.warnings:
        out += ["", "## Warnings", ""] + [f"- {note_text(w)}" for w in comparison.warnings]
    return "\n".join(out) + "\n"

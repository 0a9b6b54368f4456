"""Figures as PNG bytes (matplotlib, Agg). Pure: report in, image bytes out."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from advisor.model import Report
from advisor.render.common import MODE_LABELS, location, segment_label

_SEGMENT_COLOURS = {
    "entry": "#bbbbbb",
    "guard_lookup": "#f0c419",
    "compiled": "#2e86de",
    "gap": "#e74c3c",
    "eager": "#e67e22",
    "exit": "#888888",
}


_LEGEND = {
    "entry": "entry",
    "guard_lookup": "guard lookup",
    "compiled": "compiled region",
    "gap": "eager gap (a break)",
    "eager": "eager (skipped frame)",
    "exit": "exit",
}


def _png(fig: plt.Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def latency_figure(report: Report) -> bytes | None:
    modes = [m for m in report.modes if m.latency is not None and m.latency.samples_ms]
    if not modes:
        return None
    fig, ax = plt.subplots(figsize=(7, 0.6 + 0.7 * len(modes)))
    data = [list(m.latency.samples_ms) for m in modes if m.latency]
    ax.boxplot(data, vert=False, widths=0.5, showfliers=False)
    for i, samples in enumerate(data, 1):
        ax.scatter(samples, [i] * len(samples), s=8, alpha=0.5, color="#2e86de")
    ax.set_yticks(range(1, len(modes) + 1), [MODE_LABELS.get(m.mode, m.mode) for m in modes])
    ax.set_xlabel("ms per call (each point: mean over one timed block)")
    ax.set_title("Steady-state latency by mode")
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def break_cost_figure(report: Report) -> bytes | None:
    breaks = [b for b in report.breaks if (b.cost_ms if b.cost_ms is not None else b.gap_ms)]
    if not breaks:
        return None
    labels = [f"{b.gb_code or '?'} {location(b)}" for b in breaks][::-1]
    values = [(b.cost_ms if b.cost_ms is not None else b.gap_ms) or 0.0 for b in breaks][::-1]
    errors = [b.cost_uncertainty_ms or 0.0 for b in breaks][::-1]
    fig, ax = plt.subplots(figsize=(7, 0.6 + 0.45 * len(breaks)))
    colours = {"rewrite": "#e74c3c", "isolate": "#e67e22", "ignore": "#95a5a6"}
    ax.barh(
        labels,
        values,
        xerr=errors,
        color=[colours.get(b.verdict or "", "#2e86de") for b in breaks][::-1],
    )
    basis = "estimated cost" if any(b.cost_ms is not None for b in breaks) else "measured gap"
    ax.set_xlabel(f"ms per call ({basis})")
    ax.set_title("Graph breaks by cost per call")
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def timeline_figure(report: Report) -> bytes | None:
    calls = report.attribution.calls
    if not calls:
        return None
    call = sorted(calls, key=lambda c: c.total_us)[len(calls) // 2]
    fig, ax = plt.subplots(figsize=(9, 1.9))
    for seg in call.segments:
        ax.barh(
            0,
            seg.duration_us,
            left=seg.start_us,
            height=0.6,
            color=_SEGMENT_COLOURS.get(seg.kind, "#cccccc"),
            edgecolor="white",
            linewidth=0.4,
        )
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in _SEGMENT_COLOURS.values()]
    ax.legend(
        handles,
        [
            segment_label(k, None, None) if k != "compiled" else "compiled region"
            for k in _SEGMENT_COLOURS
        ],
        ncol=6,
        fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.45),
        frameon=False,
    )
    ax.set_yticks([])
    ax.set_xlabel("µs from the start of the call (the median profiled call, attributed times)")
    ax.set_title(f"One call, segment by segment ({call.total_us:.0f} µs)")
    return _png(fig)

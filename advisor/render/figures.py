"""Figures as PNG bytes (matplotlib, Agg). Pure: report in, image bytes out."""

from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from advisor.core.model import ActionOutcome, Report, Segment
from advisor.render import prose
from advisor.render.formatting import without_controls
from advisor.render.view import MODE_LABELS, displayer

_SEGMENT_COLOURS = {
    "entry": "#bbbbbb",
    "guard_lookup": "#f0c419",
    "compiled": "#2e86de",
    "gap": "#e74c3c",
    "eager": "#e67e22",
    "exit": "#888888",
    "backward": "#8e44ad",
    "autograd": "#c39bd3",
    "optimizer": "#27ae60",
}


_LEGEND = {
    "entry": "entry",
    "guard_lookup": "guard lookup",
    "compiled": "compiled region",
    "gap": "eager gap (a break)",
    "eager": "eager (skipped frame)",
    "exit": "exit",
    "backward": "backward graph",
    "autograd": "autograd engine (eager backward)",
    "optimizer": "optimizer",
}


def _label(text: str) -> str:
    """Text as matplotlib draws it literally: control characters have no glyph and `$` would
    start mathtext."""
    printable = "".join(ch if ch.isprintable() else "\N{REPLACEMENT CHARACTER}" for ch in text)
    return printable.replace("$", r"\$")


def png(fig: plt.Figure) -> bytes:
    """A figure as PNG bytes; the figure is closed."""
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
    return png(fig)


_PART_COLOURS = (
    ("overhead", "#e74c3c"),
    ("fusible tensor work", "#e67e22"),
    ("compute-bound tensor work", "#f5b041"),
    ("Python at the line", "#8e44ad"),
)


def break_cost_figure(report: Report) -> bytes | None:
    """Each entry's share of the step split into its parts (stacked), with the recommended
    fix's saving marked."""
    entries = [b for b in report.breaks if b.parts.total_ms > 0 or b.cost_ms > 0]
    if not entries:
        return None
    display = displayer(report)
    entries = entries[::-1]
    labels = [
        _label(f"{b.site.gb_code or '?'} {prose.location(b.site.where, display)}") for b in entries
    ]
    stacks = [
        [b.parts.overhead_ms for b in entries],
        [b.parts.tensor_work_ms - b.parts.kept_ms for b in entries],
        [b.parts.kept_ms for b in entries],
        [b.parts.python_work_ms for b in entries],
    ]
    fig, ax = plt.subplots(figsize=(7, 0.8 + 0.45 * len(entries)))
    left = [0.0] * len(entries)
    for (name, colour), values in zip(_PART_COLOURS, stacks, strict=True):
        ax.barh(labels, values, left=left, color=colour, label=name)
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.scatter(
        [b.cost_ms for b in entries],
        labels,
        marker="|",
        s=250,
        color="black",
        label="saving of the recommended fix",
        zorder=3,
    )
    ax.set_xlabel("ms per call")
    ax.set_title("Graph breaks: what each one costs, by part")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    return png(fig)


def timeline_figure(report: Report) -> bytes | None:
    calls = report.attribution.calls
    if not calls:
        return None
    call = sorted(calls, key=lambda c: c.total_us)[len(calls) // 2]
    marked = _marked_breaks(report)
    fig, ax = plt.subplots(figsize=(9, 1.6))
    for seg in call.segments:
        mine = seg.break_id is not None and seg.break_id in marked
        ax.barh(
            0,
            seg.duration_us,
            left=seg.start_us,
            height=0.6,
            color=_SEGMENT_COLOURS.get(seg.kind, "#cccccc"),
            edgecolor="black" if mine else "white",
            linewidth=1.2 if mine else 0.4,
            hatch="//" if mine else None,
        )
    _label_marked(ax, call.segments, marked)
    ax.set_ylim(-0.45, 0.8 if marked else 0.45)  # room inside the axes for the break's label
    shown = [k for k in _SEGMENT_COLOURS if any(seg.kind == k for seg in call.segments)]
    ax.legend(  # only the kinds this call has: one row under the axis
        [plt.Rectangle((0, 0), 1, 1, color=_SEGMENT_COLOURS[k]) for k in shown],
        [_LEGEND[k] for k in shown],
        ncol=max(len(shown), 1),
        fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.5),
        frameon=False,
    )
    ax.set_yticks([])
    ax.set_xlabel("µs from the start of the call (the median profiled call, attributed times)")
    ax.set_title(f"One call, segment by segment ({call.total_us:.0f} µs)")
    return png(fig)


def _marked_breaks(report: Report) -> dict[str, str]:
    """The breaks the first action removes (the costliest break where no action does), each
    with its label: the id and its line."""
    first = next((a for a in report.actions if a.outcome == ActionOutcome.DO and a.breaks), None)
    ids = first.breaks if first else tuple(b.id for b in report.breaks[:1])
    display = displayer(report)
    out = {}
    for b in ids:
        entry = report.entry(b)
        if entry is not None:
            # a file name is the user's text: no control character reaches the font
            out[b] = without_controls(
                f"{b} {display(entry.site.where.file)}:{entry.site.where.line}"
            )
    return out


def _label_marked(ax: Any, segments: tuple[Segment, ...], marked: dict[str, str]) -> None:
    """Name each marked break once, above its first gap in the call."""
    seen: set[str] = set()
    for seg in segments:
        if seg.break_id in marked and seg.break_id not in seen:
            seen.add(seg.break_id)
            x = seg.start_us + seg.duration_us / 2
            ax.annotate(marked[seg.break_id], (x, 0.3), xytext=(x, 0.6), fontsize=7,
                        ha="center", arrowprops={"arrowstyle": "-", "lw": 0.6})  # fmt: skip

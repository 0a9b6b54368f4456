"""The zoo report's figures as PNG bytes (matplotlib, Agg). Pure: a Zoo in, bytes out."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator

from advisor.render.figures import png
from advisor.sweep.aggregate import Zoo

TOP_CAUSES = 15


def speedup_figure(zoo: Zoo) -> bytes | None:
    """Histogram of the models' speedups over eager, default and fullgraph compile."""
    series = {
        "compile (default)": [m.speedup_default for m in zoo.models if m.speedup_default],
        "compile (fullgraph=True)": [
            m.speedup_fullgraph for m in zoo.models if m.speedup_fullgraph
        ],
    }
    values = [v for vs in series.values() for v in vs if v is not None]
    if not values:
        return None
    fig, ax = plt.subplots(figsize=(7, 3.2))
    bins = min(30, max(5, len(values)))
    low, high = min([*values, 1.0]), max([*values, 1.0])
    for (label, data), colour in zip(series.items(), ("#2e86de", "#27ae60"), strict=True):
        if data:
            ax.hist(data, bins=bins, range=(low, high), alpha=0.6, label=label, color=colour)
    ax.axvline(1.0, color="#555555", linestyle="--", linewidth=1)
    ax.set_xlabel("speedup over eager (eager median / mode median)")
    ax.set_ylabel("models")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(
        f"Speedup distribution ({len(series['compile (default)'])} models with a default median)"
    )
    ax.legend(fontsize=8)
    return png(fig)


def root_cause_figure(zoo: Zoo, top: int = TOP_CAUSES) -> bytes | None:
    """The costliest break locations across the zoo: summed step shares, top `top`."""
    causes = [c for c in zoo.root_causes if c.total_share > 0][:top]
    if not causes:
        return None
    labels = [
        f"{c.identity.registry_code} {c.identity.file}:{c.identity.line} "
        f"({len(c.models)} model{'s' * (len(c.models) != 1)})"
        for c in causes
    ][::-1]
    values = [c.total_share * 100 for c in causes][::-1]
    fig, ax = plt.subplots(figsize=(8, 0.7 + 0.4 * len(causes)))
    ax.barh(labels, values, color="#e74c3c")
    ax.set_xlabel("% of the step, summed over the models it appears in")
    ax.set_title(f"Cost by root cause (top {len(causes)})")
    ax.grid(axis="x", alpha=0.3)
    return png(fig)

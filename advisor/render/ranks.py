"""The words and rows of a data-parallel run: each rank's modes side by side and which rank set
the step, the graphs DDP's optimizer split on purpose, and the `optimize_ddp=False` what-if.
"""

from __future__ import annotations

from advisor.core.model import GraphSplit, Report, WhatIf
from advisor.core.taxonomy import DDP_KNOB
from advisor.render.formatting import fmt_ms

RANK_HEADERS = ("rank", "eager ms", "default ms", "fullgraph ms", "breaks", "step")

DDP_NO_OVERLAP = (
    "with one graph, DDP all-reduces the gradients only after the whole backward: they no "
    "longer overlap it (on a slow interconnect that can cost more than the graph calls save)"
)


def rank_rows(report: Report) -> tuple[tuple[str, ...], ...]:
    """Per rank: its eager, default and fullgraph medians, its breaks, and whether it set the
    step (the slowest default median)."""
    rows = []
    for timings in report.ranks:
        medians = []
        for name in ("eager", "default", "fullgraph"):
            mode = timings.mode(name)
            lat = mode.latency if mode is not None else None
            medians.append(fmt_ms(lat.median_ms) if lat else (mode.status if mode else "-"))
        step = "set the step" if timings.rank == report.step_rank else ""
        rows.append((str(timings.rank), *medians, str(timings.breaks), step))
    return tuple(rows)


def rank_note(report: Report) -> str | None:
    """Which rank set the step, and why that one."""
    if not report.ranks or report.step_rank is None:
        return None
    return (
        f"{len(report.ranks)} data-parallel ranks measured at once, in lockstep (every rank "
        f"made the same calls: exactly {report.settings.repeats} timed rounds of one call). "
        f"Rank {report.step_rank} set the step: its default-mode median is the slowest, and "
        "the others wait for it in every all-reduce; its capture, profile and what-ifs are "
        "the ones this report judges."
    )


def split_line(split: GraphSplit, report: Report) -> str:
    """One graph split at gradient-bucket boundaries: intended, with its estimated price and
    the measured `optimize_ddp=False` step where that what-if ran."""
    text = (
        f"DDP's optimizer split `{split.function}` (compile id {split.compile_id}) into "
        f"{split.graphs} graphs at gradient-bucket boundaries (intended: it overlaps the "
        "gradients' all-reduce with the backward)"
    )
    if split.graph_calls:
        text += (
            f"; the profile shows {split.graph_calls:g} graph calls per region instance and "
            f"{split.backward_calls:g} backward graph calls per step; the splits cost about "
            f"{fmt_ms(split.cost_ms)} ms per step (estimated: the extra graph calls, "
            f"{split.extra_calls:g} per step at {split.graph_call_us:.1f} µs each)"
        )
    measured = ddp_what_if(report)
    if measured is not None and measured.status == "measured" and measured.variant_ms:
        text += (
            f"; measured with `optimize_ddp=False` (one graph, no overlap): "
            f"{fmt_ms(measured.baseline_ms)} → {fmt_ms(measured.variant_ms)} ms per step"
        )
    return text + ". Not a graph break: nothing to rewrite."


def split_lines(report: Report) -> tuple[str, ...]:
    return tuple(split_line(s, report) for s in report.splits)


def ddp_what_if(report: Report) -> WhatIf | None:
    return report.what_if(DDP_KNOB.name)


DDP_WHY = (
    "DistributedDataParallel's own code (torch/nn/parallel/distributed.py): DDP runs its "
    "forward's bookkeeping (the logger, the reducer, the context manager around the wrapped "
    "module) eagerly and compiles the module it wraps as a frame of its own. Intended; nothing "
    "of yours to change and nothing of torch's to rewrite."
)

DDP_RECIPE = (
    "Nothing to change: this break is DistributedDataParallel's own, at {where} (`{code}`). "
    "Compile the model under DDP as you do (`ddp_model.compile()` or `torch.compile(ddp_model)`):"
    " Dynamo runs DDP's wrapper eagerly and compiles the module inside it, split at the "
    "gradient buckets by DDP's optimizer so the all-reduce overlaps the backward."
)

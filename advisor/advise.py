"""Advice: what each break costs per call, ranked, with a verdict, its evidence and a recipe.

Cost model (per call, for one break that runs N times per call):

    cost = R x guard lookup  +  R_graph x (region overhead + graph call)  +  gap - kept

- region overhead + guard lookup: the fixed runtime price of one more compiled region, its
  non-graph time (wrappers, prologue, return path) and the cache lookup that enters it,
  measured in the profile: for each break, those of the regions on either side of it (median
  per side), the lighter side, since merging two regions saves a region's fixed part but not
  the input-dependent part the merged region still pays (workload-wide median as fallback).
- graph call: the price of one more call of a compiled graph (Python wrapper, argument checks,
  output allocation, kernel launch), which a region's graph-call time hides inside its work.
  It is measured on a trivial graph compiled and profiled beside the workload (`harness.
  graph_call_probe`), and capped by the workload's cheapest graph call. Without it the model
  missed about a fifth of a cheap break on the k-breaks micro-benchmark.
- R is the number of regions per call that exist only because of the break: with no break the
  call is one region, and the other regions are shared out by the region instances that end
  in each break (a break inside an inlined helper splits the caller and the helper's frame:
  more regions than occurrences). For a skipped frame, R is the number of regions compiled
  separately inside it, less one. R_graph counts the same way only the regions that call a
  graph: a region with an empty graph (a resume function that only returns, say) has no
  wrappers or graph call, and its time is already in a break's gap.
- gap: the measured time after the region the break ends: the break's own statement, output
  reconstruction and the call into the resume function (Python), plus eager tensor work (aten
  ops). For a skipped frame, all of the frame's eager time. Less the gap's estimated compiled
  time: compute-bound ops (matmul, convolution, attention, recurrent layers, linear algebra:
  `torch_adapter.keeps_time_compiled`) run as the same library kernels under Inductor and keep
  their time; the other eager tensor work is counted as saved in full, because compiled, such
  ops fuse into neighbouring kernels and their per-op dispatch, which dominates small ops,
  disappears. (An earlier model discounted it by the workload's
  compiled/eager ratio; it underestimated skipped frames by about half on the scenarios, see
  reports/benchmarks/.)
All times come from `attribute`: work from the profile, overhead totals from unprofiled timing,
rescaled to the default-mode median. Not modelled: kernels that fuse across the former boundary
once the break is gone (e.g. a residual add with the next LayerNorm). How close the estimates
land is measured by benchmarks/accuracy.py (results in reports/benchmarks/accuracy).
The uncertainty combines the per-call spread of the gap and of the region overheads. A break is
`ignore` when its cost is below `ignore_share` of the default-mode median or below the noise of
that median; otherwise the category decides `rewrite` or `isolate`. When a what-if measured the
saving of removing the break, the verdict uses the measured number.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass

from advisor import torch_adapter
from advisor.attribute import AttributionResult
from advisor.model import BreakRecord, ModeResult, RecompileRecord, WhatIf
from advisor.render.common import short_path
from advisor.stats import iqr, median
from advisor.taxonomy import (
    Knob,
    category_for,
    knob_for,
    library_location,
    recipe_for,
    skipped_frame_note,
)


@dataclass(frozen=True)
class CostModel:
    """The measured constants every break's cost is built from (µs unless noted)."""

    region_overhead_us: float | None
    region_overhead_spread_us: float
    guard_lookup_us: float | None
    default_median_ms: float
    default_noise_ms: float  # standard error of the default-mode median
    graph_call_us: float | None = None  # the price of one more graph call (the probe's)

    @property
    def graph_region_us(self) -> float:
        """The fixed price of one more region that calls a graph, beyond its guard lookup."""
        return (self.region_overhead_us or 0.0) + (self.graph_call_us or 0.0)

    @property
    def per_break_fixed_us(self) -> float:
        """One more region with a graph, entered through a guard lookup."""
        return self.graph_region_us + (self.guard_lookup_us or 0.0)


@dataclass(frozen=True)
class Advice:
    breaks: tuple[BreakRecord, ...]
    recompiles: tuple[RecompileRecord, ...]
    model: CostModel
    knobs: tuple[tuple[str, Knob], ...]  # (break id, knob) pairs worth a measured what-if
    warnings: tuple[str, ...] = ()


def median_noise_ms(mode: ModeResult) -> float:
    """Standard error of a median from its IQR (normal approximation: 1.2533 sigma / sqrt n)."""
    lat = mode.latency
    if lat is None or lat.n < 2:
        return 0.0
    return 1.2533 * (lat.iqr_ms / 1.349) / math.sqrt(lat.n)


def build_cost_model(att: AttributionResult, default: ModeResult) -> CostModel:
    fixed = list(att.region_fixed_us.values())
    region_overhead = median(fixed) if fixed else None
    spread = iqr(fixed) / 2 if len(fixed) > 1 else 0.0
    lookup = (
        att.guard_lookup_us_per_call / att.guard_lookups_per_call
        if att.guard_lookups_per_call > 0
        else None
    )
    assert default.latency is not None
    return CostModel(
        region_overhead,
        spread,
        lookup,
        default.latency.median_ms,
        median_noise_ms(default),
        _graph_call_price(att),
    )


def _graph_call_price(att: AttributionResult) -> float | None:
    """The probe's graph call, capped by the workload's cheapest graph call per instance (a
    graph call never costs less than its fixed part, so a cheaper one bounds it)."""
    if att.graph_call_fixed_us is None:
        return None
    per_instance = [
        value / att.region_count_per_call[cid]
        for cid, value in att.graph_call_us_per_call.items()
        if att.region_count_per_call.get(cid)
    ]
    return min([att.graph_call_fixed_us, *per_instance])


def _per_call_gap_us(att: AttributionResult, break_id: str) -> list[float]:
    values = []
    for call in att.attribution.calls:
        values.append(
            sum(
                s.duration_us
                for s in call.segments
                if s.break_id == break_id and s.kind in ("gap", "eager")
            )
        )
    return values


def extra_regions(
    att: AttributionResult, brk: BreakRecord, breaks: tuple[BreakRecord, ...] = ()
) -> float:
    """Regions per call that exist only because of this break: removing every break leaves one
    region per call, so the other `total - 1` are shared out by the region instances that end
    in each break. A break in an inlined helper splits the caller and the helper's own frame,
    so it costs more regions than it has occurrences. For a skipped frame: the regions compiled
    separately inside it (e.g. one per layer), all but one."""
    total = sum(att.region_count_per_call.values())
    share = _extra_share(att, brk, breaks, total)
    if brk.frame_skipped:
        return share if share is not None else 0.0
    return brk.occurrences_per_call if share is None else max(brk.occurrences_per_call, share)


def extra_graph_calls(
    att: AttributionResult, brk: BreakRecord, breaks: tuple[BreakRecord, ...] = ()
) -> float:
    """Of those extra regions, the ones that call a compiled graph, shared out the same way
    (one graph call remains with no break). A region whose graph is empty (a resume function
    that only returns to its caller, say) calls no graph and has no wrappers: its time is
    already in a break's gap, so it is charged its guard lookup only."""
    regions = extra_regions(att, brk, breaks)
    graphs = sum(att.graph_region_count_per_call.values())
    if graphs <= 0:  # no graph-call events seen at all: nothing to tell the regions apart by
        return regions
    share = _extra_share(att, brk, breaks, graphs)
    return regions if share is None else min(regions, share)


def _extra_share(
    att: AttributionResult, brk: BreakRecord, breaks: tuple[BreakRecord, ...], total: float
) -> float | None:
    """This break's part of the `total - 1` regions (or graph calls) beyond the one that would
    remain with no break at all; None when the region instances give no way to share out."""
    if brk.frame_skipped:
        return max(0.0, total - 1.0)
    ends = {
        b.id: sum(att.region_count_per_call.get(cid, 0.0) for cid in b.compile_ids)
        for b in (breaks or (brk,))
        if not b.frame_skipped
    }
    denominator = sum(ends.values())
    if denominator <= 0:
        return None
    return max(0.0, total - 1.0) * ends.get(brk.id, 0.0) / denominator


def estimate(
    brk: BreakRecord,
    att: AttributionResult,
    model: CostModel,
    breaks: tuple[BreakRecord, ...] = (),
) -> BreakRecord:
    gap_us = (brk.gap_ms or 0.0) * 1e3
    regions = extra_regions(att, brk, breaks)
    graph_regions = extra_graph_calls(att, brk, breaks)
    model = _around_break(brk, att, model)
    fixed_us = regions * (model.guard_lookup_us or 0.0) + graph_regions * model.graph_region_us
    gap_work_us = min(att.gap_work_us_per_call.get(brk.id, 0.0), gap_us)
    # Compute-bound ops in the gap (matmul, conv, ...) would run as the same kernels compiled:
    # their time is the gap's estimated compiled time, and is not saved.
    kept_us = min(att.gap_kept_us_per_call.get(brk.id, 0.0), gap_work_us)
    cost_us = fixed_us + gap_us - kept_us
    gaps = _per_call_gap_us(att, brk.id)
    gap_spread = iqr(gaps) / 2 if len(gaps) > 1 else 0.0
    unc_us = math.hypot(gap_spread, graph_regions * model.region_overhead_spread_us)
    cost_ms = cost_us / 1e3
    share = cost_ms / model.default_median_ms if model.default_median_ms > 0 else None
    evidence = (
        f"{regions:g} extra region(s) x guard lookup {_us(model.guard_lookup_us)}, "
        f"{graph_regions:g} of them calling a graph x {model.graph_region_us:.1f} µs (region "
        f"overhead {_us(model.region_overhead_us)} + graph call {_us(model.graph_call_us)}) "
        f"+ measured gap {gap_us:.1f} µs (of which eager tensor work {gap_work_us:.1f} µs)"
        + (
            f" - {kept_us:.1f} µs of compute-bound ops (matmul, conv, attention...) that take "
            "the same time compiled"
            if kept_us > 0
            else ""
        )
        + "; kernel fusion across the split is not estimated"
    )
    return dataclasses.replace(
        brk,
        cost_ms=round(cost_ms, 6),
        cost_share=round(share, 6) if share is not None else None,
        cost_uncertainty_ms=round(unc_us / 1e3, 6),
        why=evidence,
    )


def _around_break(brk: BreakRecord, att: AttributionResult, model: CostModel) -> CostModel:
    """The region overhead and guard lookup this break saves: those of the regions on either
    side of it, the lighter side. Merging two regions saves a region's fixed part, not what
    grows with its inputs (guards on every parameter, the wrappers' per-input work), which
    the merged region still pays; when one side is a whole model and the other a small check,
    the workload-wide median would charge the model's input costs to the break."""
    before = brk.compile_ids
    after = att.resume_regions.get(brk.id, ())

    def lighter(values: dict[str, float], fallback: float | None) -> float | None:
        sides = [[values[c] for c in side if c in values] for side in (before, after)]
        if not all(sides):  # one side unknown (no resume region seen, say): workload-wide
            return fallback
        return min(median(side) for side in sides)

    return dataclasses.replace(
        model,
        region_overhead_us=lighter(att.region_fixed_us, model.region_overhead_us),
        guard_lookup_us=lighter(att.guard_lookup_us_by_region, model.guard_lookup_us),
    )


def _us(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} µs"


def decide(brk: BreakRecord, model: CostModel, ignore_share: float) -> BreakRecord:
    category = category_for(brk)
    library = library_location(brk)  # file, line of library code it breaks in
    where = f"{short_path(brk.file)}:{brk.line}"
    measured = _measured_saving(brk.what_if)
    cost = measured if measured is not None else (brk.cost_ms or 0.0)
    basis = "measured what-if saving" if measured is not None else "estimated cost"
    threshold = ignore_share * model.default_median_ms
    noise = max(model.default_noise_ms, brk.cost_uncertainty_ms or 0.0)
    if cost < threshold or cost < noise:
        verdict = "ignore"
        reason = f"{basis} {cost:.4f} ms/call is below " + (
            f"{ignore_share:.0%} of the {model.default_median_ms:.3f} ms step ({threshold:.4f} ms)"
            if cost < threshold
            else f"the measurement noise ({noise:.4f} ms)"
        )
    else:
        if library is not None:
            verdict = "isolate"  # the line that breaks is not the user's to rewrite
        elif brk.frame_skipped:
            verdict = "rewrite"
        else:
            verdict = category.action
        reason = (
            f"{basis} {cost:.4f} ms/call = {cost / model.default_median_ms:.1%} of the "
            f"{model.default_median_ms:.3f} ms step, above {ignore_share:.0%} and the noise "
            f"({noise:.4f} ms)"
        )
        if brk.frame_skipped:
            reason += f"; {skipped_frame_note(brk)}, so the whole frame runs eagerly"
    recipe = recipe_for(
        brk, category, where, f"{short_path(library[0])}:{library[1]}" if library else None
    )
    if verdict == "ignore":
        recipe = (
            "Leave it: not worth a change at this cost. If it grows (called more often, "
            "smaller step), the fix would be: " + recipe
        )
    why = (
        f"{category.title}; runs {brk.occurrences_per_call:g}x per call; {reason}. Evidence: "
        f"{_strip_verdict(brk.why)}"
    )
    return dataclasses.replace(
        brk,
        verdict=verdict,
        category=category.key,
        why=why,
        recipe=recipe,
        doc_url=brk.doc_url or torch_adapter.gb_doc_url(brk.gb_code),
    )


def _strip_verdict(why: str) -> str:
    return why.split(" Evidence: ", 1)[-1]


def _measured_saving(what_if: WhatIf | None) -> float | None:
    # The measurement stands for this break only if the knob removed it without putting a new
    # break in its place (e.g. `.item()` captured, then a branch on the scalar breaks instead).
    if (
        what_if is None
        or what_if.status != "measured"
        or not what_if.removes_break
        or what_if.new_breaks
        or what_if.matches_eager is False
        or what_if.saving_ms is None
    ):
        return None
    return max(what_if.saving_ms, 0.0)


def _group_labels(breaks: tuple[BreakRecord, ...]) -> dict[str, str]:
    """Breaks with one root cause: same registry code and the same explanation (e.g. the same
    disabled helper or untraceable function reached from several call sites)."""
    keys = {b.id: (b.gb_code, b.explanation) for b in breaks if b.explanation}
    counts = Counter(keys.values())
    labels = {}
    for bid, key in keys.items():
        if counts[key] > 1:
            labels[bid] = f"{key[0] or '?'}: {key[1][:90]}"
    return labels


def advise(
    att: AttributionResult,
    default: ModeResult,
    recompiles: tuple[RecompileRecord, ...] = (),
    ignore_share: float = 0.01,
) -> Advice:
    model = build_cost_model(att, default)
    warnings = []
    if model.region_overhead_us is None and att.breaks:
        warnings.append(
            "no graph-call markers in the profile: region overhead not measured; "
            "break costs count only the eager gaps"
        )
    groups = _group_labels(att.breaks)
    estimated = [estimate(b, att, model, att.breaks) for b in att.breaks]
    decided = [
        dataclasses.replace(decide(b, model, ignore_share), group=groups.get(b.id))
        for b in estimated
    ]
    ranked = tuple(sorted(decided, key=lambda b: -(b.cost_ms or 0.0)))
    knobs = []
    for b in ranked:
        knob = knob_for(b, category_for(b))
        if knob is not None:
            knobs.append((b.id, knob))
    return Advice(ranked, recompile_findings(recompiles), model, tuple(knobs), tuple(warnings))


def finalize_with_what_ifs(
    advice: Advice, what_ifs: dict[str, WhatIf], ignore_share: float
) -> tuple[BreakRecord, ...]:
    """Attach measured what-ifs (with the estimate beside them) and re-decide on them."""
    out = []
    for b in advice.breaks:
        w = what_ifs.get(b.id)
        if w is not None:
            w = dataclasses.replace(w, estimated_saving_ms=b.cost_ms)
            b = decide(dataclasses.replace(b, what_if=w), advice.model, ignore_share)
            if w.status == "measured" and (w.removes_break is False or w.new_breaks):
                # The recipe offers the knob; say that it was tried here and what happened.
                b = dataclasses.replace(
                    b,
                    recipe=b.recipe + f"\nMeasured here: `{w.knob}` does not fix this break "
                    "(the line still breaks, or another break takes its place; see the what-if); "
                    "make the code change instead.",
                )
        elif b.verdict != "ignore" and not any(bid == b.id for bid, _ in advice.knobs):
            b = dataclasses.replace(
                b,
                what_if=WhatIf(
                    knob="(none)",
                    status="not_applicable",
                    note="no Dynamo config knob removes this kind of break; only a code change "
                    "does",
                ),
            )
        out.append(b)
    return tuple(sorted(out, key=lambda x: -(x.cost_ms or 0.0)))


# --- recompiles -------------------------------------------------------------------------------

_SIZE = re.compile(r"size mismatch at index (\d+)")


def recompile_recommendation(reason: str) -> str:
    size = _SIZE.search(reason)
    if size:
        return (
            f"dimension {size.group(1)} of an input changes between calls: mark it dynamic "
            f"(`torch._dynamo.mark_dynamic(tensor, {size.group(1)})` before the first call) "
            "or compile with `dynamic=True`; or pad/bucket to a few fixed sizes"
        )
    if "dtype mismatch" in reason:
        return "an input's dtype changes between calls: cast inputs to one dtype before the call"
    if "rank mismatch" in reason or "dim mismatch" in reason:
        return "an input's number of dimensions changes: keep the rank fixed (reshape before)"
    if "requires_grad" in reason:
        return "requires_grad differs between calls: keep it stable or run under torch.no_grad()"
    if "device" in reason:
        return "an input moves between devices: keep inputs on one device"
    if "==" in reason or "!=" in reason:
        return (
            "the graph specialised on a Python value that changes: pass it as a tensor, "
            "keep it constant, or mark the int dynamic"
        )
    return f"fix the failing guard: {reason.splitlines()[0][:160]}"


def recompile_findings(recompiles: tuple[RecompileRecord, ...]) -> tuple[RecompileRecord, ...]:
    out = []
    for r in recompiles:
        if torch_adapter.is_backend_switch(r.reason):
            continue
        out.append(
            dataclasses.replace(
                r, recommendation=r.recommendation or recompile_recommendation(r.reason)
            )
        )
    return tuple(out)


def recompile_summary(recompiles: tuple[RecompileRecord, ...]) -> str | None:
    if not recompiles:
        return None
    by_function: dict[str, int] = defaultdict(int)
    for r in recompiles:
        by_function[r.function] += 1
    total_s = sum(r.compile_s or 0.0 for r in recompiles)
    parts = ", ".join(f"{fn} x{n}" for fn, n in by_function.items())
    return f"{len(recompiles)} recompile(s) ({parts}) cost {total_s:.2f} s of compile time"

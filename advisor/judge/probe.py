"""The probe's prices: two tiny graphs split by one break, profiled beside the workload and
corrected and rescaled like it, price one more graph call, one break's glue, one guard lookup
and one region's fixed part (see `advisor.measure.harness`'s probe).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from advisor.core.artifacts import Capture, FrameRecord, ProfileTrace, TraceEvent
from advisor.judge.correct import call_factors, correct, structural_event_cost
from advisor.judge.segments import owners_deep, segment_call
from advisor.judge.summaries import median_or_zero


@dataclass(frozen=True)
class ProbePrices:
    """Measured on the probe (two tiny graphs split by one break), corrected and rescaled like
    the workload: what one more break costs when it does no work."""

    graph_call_us: float | None = None  # one graph call
    glue_us: float | None = None  # the gap: reconstruction and the call into the resume
    lookup_us: float | None = None  # one guard lookup with trivial guards
    region_fixed_us: float | None = None  # one region's fixed part beyond its graph call
    calls: int = 0
    break_us: float | None = None  # one whole break, unprofiled: with minus without it


def _probe_capture(call: TraceEvent) -> Capture:
    """The probe's two regions as frames: the outer one ends in its break, the inner one in a
    return (the probe is compiled in-process; its compile ids are read off the trace)."""
    ids = sorted(
        {e.compile_id for e in owners_deep(call) if e.kind == "region" and e.compile_id},
        key=lambda cid: tuple(int(p) for p in cid.split("/") if p.isdigit()),
    )
    frames = [
        FrameRecord(cid, "probe", "probe", ops=1, end_break_id="probe" if i == 0 else None)
        for i, cid in enumerate(ids)
    ]
    return Capture(frames=tuple(frames), root_compile_id=ids[0] if ids else None)


def probe_prices(trace: ProfileTrace, rescale: float) -> ProbePrices:
    """The probe's graph call, glue, guard lookup and region overhead, corrected against its own
    unprofiled time like the workload's calls, then rescaled with them."""
    break_us = trace.probe_break_us * rescale if trace.probe_break_us is not None else None
    if not trace.probe_calls:
        return ProbePrices(break_us=break_us)
    per_event = trace.overhead_us_per_event
    reference = statistics.median(trace.probe_unprofiled_us) if trace.probe_unprofiled_us else None
    per_call = [segment_call(call, _probe_capture(call)) for call in trace.probe_calls]
    struct_cost = structural_event_cost(per_call, [reference] * len(per_call), per_event)
    graph, glue, lookup, fixed = [], [], [], []
    for cs in per_call:
        factors = call_factors(cs, reference, per_event, None, struct_cost)
        rows = correct(0, cs, factors, per_event)
        regions = [r for r in cs.regions if r.calls_graph]
        if len(regions) < 2:
            continue
        graph_work = sum(r.work_us for r in rows if r.kind == "compiled")
        compiled = sum(r.duration_us for r in rows if r.kind == "compiled")
        lookups = sum(r.duration_us for r in rows if r.kind == "guard_lookup")
        graph.append(graph_work / len(regions))
        fixed.append((compiled - graph_work) / len(regions))
        glue.append(sum(r.duration_us for r in rows if r.kind == "gap"))
        lookup.append(lookups / len(regions))
    if not graph:
        return ProbePrices(calls=len(trace.probe_calls), break_us=break_us)
    return ProbePrices(
        graph_call_us=median_or_zero(graph) * rescale,
        glue_us=median_or_zero(glue) * rescale,
        lookup_us=median_or_zero(lookup) * rescale,
        region_fixed_us=median_or_zero(fixed) * rescale,
        calls=len(graph),
        break_us=break_us,
    )

"""Attribute: turn each profiled call into ordered segments, correct them for the profiler's
distortion, and reduce them to per-region and per-break figures the cost model reads.

Three steps, each a function of the previous step's records, each in its own module:

1. segment (`advisor.judge.segments.segment_call`): the profiler events under each call's record
   become segments that tile the call exactly (entry, guard lookups, compiled regions, the gaps
   after regions that end in a break, eager time, exit), nested regions carved out of their
   parent;
2. correct (`advisor.judge.correct`): work keeps its profiled time less the profiler's cost per
   aten event; the runtime overhead is what the unprofiled call leaves, taken out where the
   profiler's events are; then every call is rescaled to the mode's median. The result is one
   typed table: a row per segment, with its work, overhead and compute-bound µs;
3. reduce (`advisor.judge.summaries.reduce_table`): medians per call over the table, per region
   (instances, graph time, fixed overhead per instance, guard lookup) and per break
   (occurrences, owned time, its tensor work and compute-bound part).

The probe's prices (one more graph call, one break's glue: `advisor.judge.probe`) are measured
the same way. No torch here: it runs on recorded artifacts (tests/data).
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass, field

from advisor.core.artifacts import Capture, ProfileTrace
from advisor.core.model import Attribution, Calibration, CallTimeline, Note, Segment
from advisor.judge.correct import (
    CallFactors,
    SegmentRow,
    call_factors,
    call_references,
    correct,
    structural_event_cost,
)
from advisor.judge.probe import ProbePrices, probe_prices
from advisor.judge.segments import CallSegments, RawSegment, segment_call
from advisor.judge.summaries import (
    RegionSummary,
    SiteSummary,
    Totals,
    median_or_zero,
    reduce_table,
)

# What the rest of the judge and the tests import from here (the steps live in their modules).
__all__ = [
    "AttributionResult",
    "ProbePrices",
    "RawSegment",
    "RegionSummary",
    "SiteSummary",
    "Totals",
    "attribute",
    "probe_prices",
    "segment_call",
]


@dataclass(frozen=True)
class AttributionResult:
    attribution: Attribution
    rows: tuple[SegmentRow, ...]
    regions: dict[str, RegionSummary]
    sites: dict[str, SiteSummary]
    totals: Totals
    probe: ProbePrices = field(default_factory=ProbePrices)
    notes: tuple[Note, ...] = ()


def attribute(
    trace: ProfileTrace, capture: Capture, unprofiled_median_ms: float | None = None
) -> AttributionResult:
    """Segment every profiled call, correct for profiler overhead, and reduce per region and
    per break. `unprofiled_median_ms` is the mode's median the segments are rescaled to."""
    notes = list(trace.notes)
    per_call = [segment_call(call, capture) for call in trace.calls]
    per_event = trace.overhead_us_per_event
    refs, source = call_references(trace, len(per_call))
    final_us = unprofiled_median_ms * 1000.0 if unprofiled_median_ms is not None else None
    if source == "none" and final_us:
        refs, source = [final_us] * len(per_call), "given"
    struct_cost = structural_event_cost(per_call, refs, per_event)
    factors = [
        call_factors(cs, ref, per_event, final_us, struct_cost)
        for cs, ref in zip(per_call, refs, strict=True)
    ]
    rows = [
        row
        for index, (cs, f) in enumerate(zip(per_call, factors, strict=True))
        for row in correct(index, cs, f, per_event)
    ]
    regions, sites, totals = reduce_table(rows, per_call, capture)
    rescale = median_or_zero(f.rescale for f in factors) if factors else 1.0
    probe = probe_prices(trace, rescale)
    fallbacks = sum(f.fallback for f in factors)
    if fallbacks * 2 > len(per_call):
        notes.append(Note("profile_fallback", values={"calls": fallbacks, "of": len(per_call)}))
    notes += _unknown_regions(per_call, capture)
    calibration = _calibration(trace, per_call, factors, refs, source, final_us, probe)
    calibration = dataclasses.replace(calibration, structural_event_us=struct_cost)
    attribution = Attribution(
        coverage=_coverage(per_call),
        profiled_calls=len(per_call),
        calibration=calibration,
        calls=_timelines(rows, len(per_call)),
    )
    return AttributionResult(attribution, tuple(rows), regions, sites, totals, probe, tuple(notes))


def _coverage(per_call: list[CallSegments]) -> float | None:
    covered = sum(s.duration_us for cs in per_call for s in cs.segments)
    measured = sum(cs.total_us for cs in per_call)
    return round(covered / measured, 4) if measured > 0 else None


def _unknown_regions(per_call: list[CallSegments], capture: Capture) -> list[Note]:
    seen = {r.compile_id for cs in per_call for r in cs.regions}
    unknown = sorted(seen - {f.compile_id for f in capture.frames})
    return [Note("unknown_regions", ", ".join(unknown))] if unknown else []


def _timelines(rows: list[SegmentRow], n: int) -> tuple[CallTimeline, ...]:
    out = []
    for index in range(n):
        segments, cursor = [], 0.0
        for row in (r for r in rows if r.call == index):
            segments.append(
                Segment(
                    row.kind,
                    round(cursor, 3),
                    round(row.duration_us, 3),
                    row.compile_id,
                    row.break_id,
                    round(row.work_us, 3),
                )
            )
            cursor += row.duration_us
        out.append(CallTimeline(index, round(cursor, 3), tuple(segments)))
    return tuple(out)


def _calibration(
    trace: ProfileTrace,
    per_call: list[CallSegments],
    factors: list[CallFactors],
    refs: list[float | None],
    source: str,
    final_us: float | None,
    probe: ProbePrices,
) -> Calibration:
    event = trace.calibration
    known = [r for r in refs if r]
    reference = median_or_zero(known) if known else None
    profiled = median_or_zero(cs.total_us for cs in per_call) if per_call else None
    whole_call = None
    if per_call and trace.unprofiled_us:
        events = median_or_zero(float(c.n_events) for c in trace.calls)
        whole_call = (profiled or 0.0) - statistics.median(trace.unprofiled_us)
        whole_call = whole_call / max(events, 1.0)
    return Calibration(
        overhead_us_per_event=trace.overhead_us_per_event,
        calibration_profiled_us=event.profiled_us if event else None,
        calibration_bare_us=event.bare_us if event else None,
        events_per_op=event.events_per_op if event else None,
        reference=source,
        sessions=trace.sessions,
        reference_us=reference,
        step_us=final_us or reference,
        overhead_scale=median_or_zero(
            f.kept_overhead(cs) for f, cs in zip(factors, per_call, strict=True)
        )
        if factors
        else 1.0,
        rescale=median_or_zero(f.rescale for f in factors) if factors else 1.0,
        profiled_ratio=(profiled / reference) if profiled and reference else None,
        fallback_calls=sum(f.fallback for f in factors),
        graph_call_us=probe.graph_call_us,
        glue_us=probe.glue_us,
        probe_break_us=probe.break_us,
        probe_calls=probe.calls,
        whole_call_us_per_event=whole_call,
    )

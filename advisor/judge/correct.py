"""Correct: from profiled to unprofiled time (step 2 of `advisor.judge.attribute`).

Work (graph calls, top-level aten ops) keeps its profiled time less `overhead_us_per_event` per
aten event in it. The rest of the call (runtime overhead: wrappers, guard lookups, Python) is what
the profiler inflates most: its total is the unprofiled call (timed right before the profile, per
session) minus that work, shared out by profiled overhead time. An unprofiled call slower than
the profile allows is machine drift and scales work and overhead alike. Then every call is
rescaled to the mode's median (the harness's, timed earlier), so the profile gives shares and the
unprofiled timing totals. The result is one typed table: a row per segment, with its work,
overhead and compute-bound µs.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from advisor.core.artifacts import ProfileTrace
from advisor.judge.segments import CallSegments, RawSegment


@dataclass(frozen=True)
class SegmentRow:
    """One corrected segment of one call (µs): its work, its overhead, and of the work the
    compute-bound part."""

    call: int
    kind: str
    compile_id: str | None
    break_id: str | None
    work_us: float
    overhead_us: float
    kept_us: float = 0.0

    @property
    def duration_us(self) -> float:
        return self.work_us + self.overhead_us


@dataclass(frozen=True)
class CallFactors:
    """How one call's profiled segments become unprofiled ones."""

    reference_us: float | None  # the unprofiled call time the split is made against
    removed_us: tuple[float, ...]  # profiler time taken out of each segment's overhead
    work_factor: float  # applied to corrected work and kept overhead (1 unless drift)
    rescale: float  # then everything, to the mode's median
    fallback: bool = False  # work alone exceeded the reference: all segments scaled alike

    def kept_overhead(self, cs: CallSegments) -> float:
        """The share of the profiled overhead this call keeps."""
        raw = sum(max(0.0, s.duration_us - s.work_us) for s in cs.segments)
        return (raw - sum(self.removed_us)) / raw if raw > 0 else 1.0


def corrected_work(segment: RawSegment, per_event_us: float) -> float:
    """A segment's work less the profiler's cost of the aten events in it."""
    if not segment.work_us:
        return 0.0
    return max(0.0, segment.work_us - (segment.n_events - segment.n_struct) * per_event_us)


def structural_event_cost(
    per_call: list[CallSegments], refs: list[float | None], per_event_us: float
) -> float:
    """The profiler's cost per structural event (a region, lookup, graph call, prologue: the
    record_function-style events, some of which exist only while profiling), from the calls
    themselves: the median over calls of the profiled excess over the unprofiled reference per
    structural event. A median, so a call hit by an outside interruption does not set it."""
    values = []
    for cs, ref in zip(per_call, refs, strict=True):
        events = sum(seg.n_struct for seg in cs.segments)
        if not ref or not events:
            continue
        work = sum(corrected_work(seg, per_event_us) for seg in cs.segments)
        overhead = sum(max(0.0, seg.duration_us - seg.work_us) for seg in cs.segments)
        values.append(max(0.0, work + overhead - ref) / events)
    return float(statistics.median(values)) if values else 0.0


def call_factors(
    cs: CallSegments,
    reference_us: float | None,
    per_event_us: float,
    final_us: float | None,
    struct_event_us: float = 0.0,
) -> CallFactors:
    """What to take out of each segment so the call adds up to its unprofiled reference.

    The profiler's cost sits where its events are: each structural event costs
    `struct_event_us`, half where it starts and half right after it ends, so that much comes
    out of those segments' overhead (never more than a segment has). Whatever the events do
    not explain (an interruption, a general slowdown) comes out of the overhead in proportion
    to time. An eager stretch with no events nearby (Python at a break, a wait) so keeps its
    time. A reference above profiled work + overhead is machine drift: work and overhead are
    scaled alike."""
    rescale = final_us / reference_us if final_us and reference_us else 1.0
    target = reference_us or cs.total_us
    work = sum(corrected_work(s, per_event_us) for s in cs.segments)
    overheads = [max(0.0, s.duration_us - s.work_us) for s in cs.segments]
    if target - work < 0.05 * target or sum(overheads) <= 0:
        factor = target / cs.total_us if cs.total_us > 0 else 1.0
        removed = tuple(o * (1.0 - factor) for o in overheads)
        return CallFactors(reference_us, removed, factor, rescale, fallback=True)
    excess = work + sum(overheads) - target
    if excess <= 0:
        drift = target / (work + sum(overheads))
        return CallFactors(reference_us, (0.0,) * len(overheads), drift, rescale)
    removed = _take_out(excess, overheads, cs.segments, struct_event_us)
    return CallFactors(reference_us, tuple(removed), 1.0, rescale)


def _take_out(
    excess: float, overheads: list[float], segments: tuple[RawSegment, ...], per_event: float
) -> list[float]:
    """The excess out of the segments: first what their structural events cost, then the rest
    in proportion to the overhead each has left."""
    at_events = [
        min(o, (s.n_struct + s.n_struct_ends) / 2 * per_event)
        for s, o in zip(segments, overheads, strict=True)
    ]
    if sum(at_events) > excess:
        at_events = [t * excess / sum(at_events) for t in at_events]
    room = [o - t for o, t in zip(overheads, at_events, strict=True)]
    rest = excess - sum(at_events)
    if sum(room) <= 0:
        return at_events
    return [t + rest * r / sum(room) for t, r in zip(at_events, room, strict=True)]


def correct(
    index: int, cs: CallSegments, factors: CallFactors, per_event_us: float
) -> list[SegmentRow]:
    rows = []
    for s, removed in zip(cs.segments, factors.removed_us, strict=True):
        raw_overhead = max(0.0, s.duration_us - s.work_us)
        if factors.fallback:  # keep each segment's profiled split, scaled alike
            work = s.work_us * factors.work_factor
            overhead = raw_overhead * factors.work_factor
        else:
            work = corrected_work(s, per_event_us) * factors.work_factor
            overhead = (raw_overhead - removed) * factors.work_factor
        kept = work * s.kept_us / s.work_us if s.work_us > 0 else 0.0
        q = factors.rescale
        rows.append(
            SegmentRow(index, s.kind, s.compile_id, s.break_id, work * q, overhead * q, kept * q)
        )
    return rows


def call_references(trace: ProfileTrace, n: int) -> tuple[list[float | None], str]:
    """Each profiled call's unprofiled reference: its session's median when the profile was
    taken in sessions, else the median of all unprofiled calls, else none."""
    if len(trace.call_unprofiled_us) == n and all(trace.call_unprofiled_us):
        return list(trace.call_unprofiled_us), "sessions"
    if trace.unprofiled_us:
        return [statistics.median(trace.unprofiled_us)] * n, "sessions"
    return [None] * n, "none"

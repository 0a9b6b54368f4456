"""Attribute: turn each profiled call into ordered segments, correct them for the profiler's
distortion, and reduce them to per-region and per-break figures the cost model reads.

Three steps, each a function of the previous step's records:

1. segment (`segment_call`): the profiler events under each call's record become segments that
   tile the call exactly, nested regions carved out of their parent:
   - `entry`: from the call's start to the first guard lookup/region (the torch.compile wrapper);
   - `guard_lookup`: a `TorchDynamo Cache Lookup` (tagged with the region it guards);
   - `compiled` (X): region X up to the end of its graph call, and all of a region that ends in
     a return (its return path is fixed region overhead);
   - `gap` (X): the rest of region X when X ends in a break: the break's eager work, output
     reconstruction, the call into the resume function (nested regions excluded);
   - `eager`: time under the call outside any region between regions (a skipped frame's code;
     its break id is set when the function's own frame was skipped);
   - `exit`: after the last region.
2. correct (`calibrate`, `correct`): work (graph calls, top-level aten ops) keeps its profiled
   time less `overhead_us_per_event` per aten event in it. The rest of the call (runtime
   overhead: wrappers, guard lookups, Python) is what the profiler inflates most: its total is
   the unprofiled call (timed right before the profile, per session) minus that work, shared out
   by profiled overhead time. An unprofiled call slower than the profile allows is machine drift
   and scales work and overhead alike. Then every call is rescaled to the mode's median (the
   harness's, timed earlier), so the profile gives shares and the unprofiled timing totals. The
   result is one typed table: a row per segment, with its work, overhead and compute-bound µs.
3. reduce (`reduce_table`): medians per call over the table, per region (instances, graph time,
   fixed overhead per instance, guard lookup) and per break (occurrences, owned time, its
   tensor work and compute-bound part), plus the probe's prices (one more graph call, one
   break's glue) measured the same way.

No torch here: it runs on recorded artifacts (tests/data).
"""

from __future__ import annotations

import dataclasses
import itertools
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from advisor.core.artifacts import Capture, FrameRecord, ProfileTrace, TraceEvent
from advisor.core.model import Attribution, Calibration, CallTimeline, Note, Segment


@dataclass(frozen=True)
class RawSegment:
    kind: str
    start_us: float
    duration_us: float
    compile_id: str | None = None
    break_id: str | None = None
    n_events: int = 0  # profiler events that start inside this segment
    n_struct: int = 0  # of which structural (record_function-style, not aten ops)
    n_struct_ends: int = 0  # structural events that end inside this segment
    work_us: float = 0.0  # time inside work events: graph calls and top-level aten ops
    kept_us: float = 0.0  # of which compute-bound aten ops (matmul, conv...): same time compiled


@dataclass(frozen=True)
class RegionInstance:
    """One execution of a compiled region within a call."""

    compile_id: str
    start_us: float
    duration_us: float
    ancestors: tuple[str, ...] = ()  # compile ids of the enclosing instances, outermost first
    calls_graph: bool = False  # a graph-call event inside (False: empty graph, or none seen)


@dataclass(frozen=True)
class CallSegments:
    total_us: float
    segments: tuple[RawSegment, ...]
    regions: tuple[RegionInstance, ...]


# --- the segmenter ----------------------------------------------------------------------------


class _Segmenter:
    def __init__(self, capture: Capture | None, call: TraceEvent) -> None:
        self.capture = capture
        self.root_skip = capture.root_skip_break_id if capture is not None else None
        self.segments: list[RawSegment] = []
        self.regions: list[RegionInstance] = []
        self.struct_ends = _structural_ends(call)

    def end_break(self, compile_id: str) -> str | None:
        if self.capture is None:
            return None
        frame = self.capture.frame(compile_id)
        return frame.end_break_id if frame is not None else None

    def emit(
        self,
        kind: str,
        start: float,
        end: float,
        events: list[tuple[float, bool]],
        compile_id: str | None = None,
        break_id: str | None = None,
        work: list[WorkInterval] | None = None,
    ) -> None:
        if end - start <= 0:
            return
        inside = [structural for t, structural in events if start <= t < end]
        overlaps = [(max(0.0, min(end, b) - max(start, a)), kept) for a, b, kept in work or ()]
        self.segments.append(
            RawSegment(
                kind,
                start,
                end - start,
                compile_id,
                break_id,
                len(inside),
                sum(inside),
                sum(1 for t in self.struct_ends if start <= t < end),
                sum(o for o, _ in overlaps),
                sum(o for o, kept in overlaps if kept),
            )
        )


WorkInterval = tuple[float, float, bool]  # (start, end, keeps its time when compiled)


def _work_intervals(event: TraceEvent) -> list[WorkInterval]:
    """Top-level aten ops under an event, outside its owners: the eager work it does, each
    marked if it is compute-bound (it would run as the same kernel when compiled)."""
    out: list[WorkInterval] = []
    for child in event.children:
        if _is_owner(child):
            continue
        if child.kind == "aten":
            end = child.start_us + child.duration_us
            out.append((child.start_us, end, child.keeps_time))
        else:
            out.extend(_work_intervals(child))
    return out


def _owners(event: TraceEvent) -> list[TraceEvent]:
    """The nearest structural descendants (regions, lookups, graph calls) of an event."""
    out: list[TraceEvent] = []
    for child in event.children:
        if _is_owner(child):
            out.append(child)
        else:
            out.extend(_owners(child))
    return out


def _is_owner(event: TraceEvent) -> bool:
    return event.kind in ("region", "lookup", "graph_call")


def _event_starts(event: TraceEvent, stop_at_owners: bool = True) -> list[tuple[float, bool]]:
    """Start times of the profiler events an owner is charged for: itself and its non-owner
    descendants (folded subtrees are counted at their start)."""
    starts = [(event.start_us, event.structural)]
    for child in event.children:
        if stop_at_owners and _is_owner(child):
            continue
        starts.extend(_event_starts(child, stop_at_owners))
    if not event.children and event.n_events > 1:
        starts.extend([(event.start_us, False)] * (event.n_events - 1))
    return starts


def _structural_ends(call: TraceEvent) -> list[float]:
    """End times of the structural events under a call (not the call's own record)."""
    out: list[float] = []
    stack = list(call.children)
    while stack:
        event = stack.pop()
        if event.structural:
            out.append(event.start_us + event.duration_us)
        stack.extend(event.children)
    return out


def _own_intervals(start: float, end: float, owners: list[TraceEvent]) -> list[tuple[float, float]]:
    """[start, end) minus the owner children's intervals, in order."""
    out: list[tuple[float, float]] = []
    cursor = start
    for child in sorted(owners, key=lambda e: e.start_us):
        c_start = max(child.start_us, cursor)
        if c_start > cursor:
            out.append((cursor, min(c_start, end)))
        cursor = max(cursor, child.start_us + child.duration_us)
    if cursor < end:
        out.append((cursor, end))
    return out


def segment_call(call: TraceEvent, capture: Capture | None = None) -> CallSegments:
    """Split one call's record into ordered segments that tile it exactly."""
    seg = _Segmenter(capture, call)
    call_start, call_end = call.start_us, call.start_us + call.duration_us
    owners = _owners(call)
    events = _event_starts(call)
    work = _work_intervals(call)
    region_spans = [o for o in owners if o.kind == "region"]
    lookups = [o for o in owners if o.kind == "lookup"]
    first = min((o.start_us for o in region_spans + lookups), default=None)
    last = max((o.start_us + o.duration_us for o in region_spans), default=None)
    glue = _lookup_glue(owners)
    for a, b in _own_intervals(call_start, call_end, owners):
        if (a, b) in glue and seg.root_skip is None:  # between a lookup and its region
            seg.emit("guard_lookup", a, b, events, compile_id=glue[(a, b)])
            continue
        pieces = [(a, b)]
        for lo, hi, kind in (
            (call_start, first, "entry"),
            (first, last, "eager"),
            (last, call_end, "exit"),
        ):
            if lo is None or hi is None:
                continue
            for x, y in pieces:
                s, e = max(x, lo), min(y, hi)
                if e > s:
                    if seg.root_skip is not None:
                        seg.emit("eager", s, e, events, break_id=seg.root_skip, work=work)
                    else:
                        seg.emit(kind, s, e, events, work=work)
        if first is None:  # no region and no lookup at all: the whole call ran eagerly
            seg.emit("eager", a, b, events, break_id=seg.root_skip, work=work)
    _walk_owners(seg, owners, parent=())
    segments = sorted(seg.segments, key=lambda s: s.start_us)
    return CallSegments(call.duration_us, tuple(_merge(segments)), tuple(seg.regions))


def _lookup_glue(owners: list[TraceEvent]) -> dict[tuple[float, float], str | None]:
    """Intervals from the end of a cache lookup to the start of the region right after it."""
    ordered = sorted(owners, key=lambda e: e.start_us)
    out: dict[tuple[float, float], str | None] = {}
    for prev, nxt in itertools.pairwise(ordered):
        if prev.kind == "lookup" and nxt.kind == "region":
            out[(prev.start_us + prev.duration_us, nxt.start_us)] = nxt.compile_id
    return out


def _walk_owners(seg: _Segmenter, owners: list[TraceEvent], parent: tuple[str, ...]) -> None:
    ordered = sorted(owners, key=lambda e: e.start_us)
    for i, owner in enumerate(ordered):
        start, end = owner.start_us, owner.start_us + owner.duration_us
        if owner.kind == "lookup":
            nxt = next((o for o in ordered[i + 1 :] if o.kind == "region"), None)
            cid = nxt.compile_id if nxt is not None else None
            inner = _owners(owner)
            for a, b in _own_intervals(start, end, inner):
                seg.emit("guard_lookup", a, b, _event_starts(owner), compile_id=cid)
            _walk_owners(seg, inner, parent)
        elif owner.kind == "region":
            _region(seg, owner, parent)
        else:  # a graph call outside any region (should not happen): count it as eager
            seg.emit(
                "eager",
                start,
                end,
                _event_starts(owner, stop_at_owners=False),
                work=[(start, end, False)],
            )


def _region(seg: _Segmenter, region: TraceEvent, parent: tuple[str, ...]) -> None:
    cid = region.compile_id or "?"
    start, end = region.start_us, region.start_us + region.duration_us
    owners = _owners(region)
    graph_calls = [o for o in owners if o.kind == "graph_call"]
    graph = graph_calls[0] if graph_calls else None
    break_id = seg.end_break(cid)
    events = _event_starts(region)
    work = _work_intervals(region)
    # Everything up to the end of the graph call is the compiled region; with no graph call,
    # a region whose graph is empty is all gap, one that ends in a return is all compiled.
    if graph is not None:
        split = graph.start_us + graph.duration_us
    elif break_id is not None and _graph_ops(seg.capture, cid) in (0, None):
        split = start
    elif break_id is not None:
        split = end  # graph not separable (no graph-call event): counted as compiled
    else:
        split = end
    glue = _lookup_glue(owners)
    for a, b in _own_intervals(start, end, owners):
        if (a, b) in glue:  # between a nested lookup and its region: entering the resume code
            seg.emit("guard_lookup", a, b, events, compile_id=glue[(a, b)])
        elif b <= split:
            seg.emit("compiled", a, b, events, compile_id=cid, work=work)
        elif a >= split:
            kind = "gap" if break_id is not None else "compiled"
            seg.emit(kind, a, b, events, compile_id=cid, break_id=break_id, work=work)
        else:
            seg.emit("compiled", a, split, events, compile_id=cid, work=work)
            kind = "gap" if break_id is not None else "compiled"
            seg.emit(kind, split, b, events, compile_id=cid, break_id=break_id, work=work)
    for g in graph_calls:
        g_start, g_end = g.start_us, g.start_us + g.duration_us
        seg.emit(
            "compiled",
            g_start,
            g_end,
            _event_starts(g, stop_at_owners=False),
            cid,
            work=[(g_start, g_end, False)],
        )
    seg.regions.append(
        RegionInstance(cid, start, region.duration_us, parent, calls_graph=bool(graph_calls))
    )
    inner = [o for o in owners if o.kind != "graph_call"]
    _walk_owners(seg, inner, parent=(*parent, cid))


def _graph_ops(capture: Capture | None, compile_id: str) -> int | None:
    if capture is None:
        return None
    frame = capture.frame(compile_id)
    return frame.ops if frame is not None else None


def _merge(segments: list[RawSegment]) -> list[RawSegment]:
    out: list[RawSegment] = []
    for s in segments:
        if out:
            p = out[-1]
            same = (p.kind, p.compile_id, p.break_id) == (s.kind, s.compile_id, s.break_id)
            if same and abs(p.start_us + p.duration_us - s.start_us) < 1e-6:
                out[-1] = RawSegment(
                    p.kind,
                    p.start_us,
                    p.duration_us + s.duration_us,
                    p.compile_id,
                    p.break_id,
                    p.n_events + s.n_events,
                    p.n_struct + s.n_struct,
                    p.n_struct_ends + s.n_struct_ends,
                    p.work_us + s.work_us,
                    p.kept_us + s.kept_us,
                )
                continue
        out.append(s)
    return out


# --- correct: from profiled to unprofiled time ------------------------------------------------


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


def _references(trace: ProfileTrace, n: int) -> tuple[list[float | None], str]:
    """Each profiled call's unprofiled reference: its session's median when the profile was
    taken in sessions, else the median of all unprofiled calls, else none."""
    if len(trace.call_unprofiled_us) == n and all(trace.call_unprofiled_us):
        return list(trace.call_unprofiled_us), "sessions"
    if trace.unprofiled_us:
        return [statistics.median(trace.unprofiled_us)] * n, "sessions"
    return [None] * n, "none"


# --- reduce: medians per call -----------------------------------------------------------------


@dataclass(frozen=True)
class RegionSummary:
    """One compile id's region, per call (medians over the profiled calls)."""

    compile_id: str
    instances: float
    graph_instances: float  # instances that called a graph
    time_us: float  # compiled segments (and gaps of a region that ends in no known break)
    graph_call_us: float  # work inside its graph calls
    lookup_us: float  # guard lookups that enter it

    @property
    def fixed_us(self) -> float | None:
        """Per instance: the region's time beyond its graph call (wrappers, prologue, return);
        None for a region without graph-call events."""
        if not self.instances or self.graph_call_us <= 0:
            return None
        return max(0.0, (self.time_us - self.graph_call_us) / self.instances)

    @property
    def lookup_per_instance_us(self) -> float | None:
        return self.lookup_us / self.instances if self.instances else None


@dataclass(frozen=True)
class SiteSummary:
    """The time one break site owns, per call: the gaps after the regions it ends and, when a
    frame it made Dynamo skip is the function itself, that frame's eager time."""

    break_id: str
    occurrences: float
    owned_us: float
    work_us: float  # eager aten work in that time
    kept_us: float  # of which compute-bound
    per_call_us: tuple[float, ...] = ()
    resume_regions: tuple[str, ...] = ()  # regions entered right after its gap
    # Region instances per call entered from its time (a call's first region excluded: it
    # would exist with no break), and of those the ones that call a graph.
    regions: float = 0.0
    graph_regions: float = 0.0


@dataclass(frozen=True)
class Totals:
    """Per call (medians): the parts of the call outside regions and breaks."""

    call_us: float
    entry_us: float = 0.0
    exit_us: float = 0.0
    eager_us: float = 0.0  # eager time outside regions not tied to a break
    lookup_us: float = 0.0
    lookups: float = 0.0
    compiled_us: float = 0.0  # compiled segments, gaps of regions ending in no known break
    compiled_work_us: float = 0.0


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


@dataclass(frozen=True)
class AttributionResult:
    attribution: Attribution
    rows: tuple[SegmentRow, ...]
    regions: dict[str, RegionSummary]
    sites: dict[str, SiteSummary]
    totals: Totals
    probe: ProbePrices = field(default_factory=ProbePrices)
    notes: tuple[Note, ...] = ()


def _median(values: Iterable[float]) -> float:
    listed = list(values)
    return float(statistics.median(listed)) if listed else 0.0


RowValue = Callable[[SegmentRow], tuple[str | None, float]]


def _per_call(rows: Iterable[SegmentRow], n: int, value: RowValue) -> dict[str, list[float]]:
    """{key: per-call values (0 where a call lacks it)} for `value(row) -> (key, µs)`; rows
    whose key is None are left out."""
    acc: dict[str, list[float]] = defaultdict(lambda: [0.0] * n)
    for row in rows:
        key, amount = value(row)
        if key is not None:
            acc[key][row.call] += amount
    return acc


def reduce_table(
    rows: list[SegmentRow], per_call: list[CallSegments], capture: Capture
) -> tuple[dict[str, RegionSummary], dict[str, SiteSummary], Totals]:
    n = len(per_call)
    regions = _region_summaries(rows, per_call, n)
    sites = _site_summaries(rows, per_call, capture, n)
    totals = _totals(rows, per_call, n)
    return regions, sites, totals


def _region_summaries(
    rows: list[SegmentRow], per_call: list[CallSegments], n: int
) -> dict[str, RegionSummary]:
    def region_time(r: SegmentRow) -> tuple[str | None, float]:
        owned = r.kind == "compiled" or (r.kind == "gap" and not r.break_id)
        return (r.compile_id if owned else None), r.duration_us

    time = _per_call(rows, n, region_time)
    graph = _per_call(
        rows, n, lambda r: (r.compile_id if r.kind == "compiled" else None, r.work_us)
    )
    lookup = _per_call(
        rows, n, lambda r: (r.compile_id if r.kind == "guard_lookup" else None, r.duration_us)
    )
    counts = _instance_counts(per_call, n, graph_only=False)
    graph_counts = _instance_counts(per_call, n, graph_only=True)
    return {
        cid: RegionSummary(
            cid,
            _median(counts[cid]),
            _median(graph_counts.get(cid, [0.0] * n)),
            _median(time.get(cid, [0.0])),
            _median(graph.get(cid, [0.0])),
            _median(lookup.get(cid, [0.0])),
        )
        for cid in counts
    }


def _instance_counts(
    per_call: list[CallSegments], n: int, graph_only: bool
) -> dict[str, list[float]]:
    counts: dict[str, list[float]] = defaultdict(lambda: [0.0] * n)
    for index, cs in enumerate(per_call):
        for r in cs.regions:
            if r.calls_graph or not graph_only:
                counts[r.compile_id][index] += 1
    return counts


def _site_summaries(
    rows: list[SegmentRow], per_call: list[CallSegments], capture: Capture, n: int
) -> dict[str, SiteSummary]:
    def owned(r: SegmentRow) -> tuple[str | None, float]:
        return (r.break_id if r.kind in ("gap", "eager") else None), r.duration_us

    time = _per_call(rows, n, owned)
    work = _per_call(rows, n, lambda r: (owned(r)[0], r.work_us))
    kept = _per_call(rows, n, lambda r: (owned(r)[0], r.kept_us))
    occurrences = _occurrences(per_call, capture, n)
    resumes = _resume_regions(per_call)
    entered, entered_graph = _regions_entered(per_call, n)
    out = {}
    for site in capture.sites:
        values = time.get(site.id, [0.0] * n)
        out[site.id] = SiteSummary(
            site.id,
            _median(occurrences.get(site.id, [0.0] * n)),
            _median(values),
            _median(work.get(site.id, [0.0])),
            _median(kept.get(site.id, [0.0])),
            tuple(round(v, 3) for v in values),
            resumes.get(site.id, ()),
            _median(entered.get(site.id, [0.0])),
            _median(entered_graph.get(site.id, [0.0])),
        )
    return out


def _regions_entered(
    per_call: list[CallSegments], n: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Per break id and call: region instances entered from its gap or eager time."""
    regions: dict[str, list[float]] = defaultdict(lambda: [0.0] * n)
    graphs: dict[str, list[float]] = defaultdict(lambda: [0.0] * n)
    for index, cs in enumerate(per_call):
        instances = sorted(cs.regions, key=lambda r: r.start_us)
        for region in instances[1:]:
            owner = _owner_before(cs.segments, region.start_us)
            if owner is not None:
                regions[owner][index] += 1
                graphs[owner][index] += 1 if region.calls_graph else 0
    return regions, graphs


def _owner_before(segments: tuple[RawSegment, ...], start_us: float) -> str | None:
    """The break whose gap (or skipped frame's eager time) was the last one before `start_us`."""
    owner = None
    for seg in segments:
        if seg.start_us >= start_us:
            break
        if seg.kind in ("gap", "eager") and seg.break_id:
            owner = seg.break_id
        elif seg.kind == "entry":
            owner = None
    return owner


def _kind_total(
    rows: list[SegmentRow],
    n: int,
    kinds: tuple[str, ...],
    with_break: bool | None = None,
    work: bool = False,
) -> float:
    """Median per call of the segments of these kinds (with or without a break id)."""

    def pick(r: SegmentRow) -> tuple[str | None, float]:
        wanted = r.kind in kinds and (with_break is None or bool(r.break_id) == with_break)
        return ("all" if wanted else None), (r.work_us if work else r.duration_us)

    return _median(_per_call(rows, n, pick).get("all", [0.0] * n))


def _totals(rows: list[SegmentRow], per_call: list[CallSegments], n: int) -> Totals:
    lookups = [float(sum(1 for s in cs.segments if s.kind == "guard_lookup")) for cs in per_call]
    return Totals(
        call_us=_kind_total(rows, n, ("entry", "guard_lookup", "compiled", "gap", "eager", "exit")),
        entry_us=_kind_total(rows, n, ("entry",)),
        exit_us=_kind_total(rows, n, ("exit",)),
        eager_us=_kind_total(rows, n, ("eager",), with_break=False),
        lookup_us=_kind_total(rows, n, ("guard_lookup",)),
        lookups=_median(lookups),
        compiled_us=_kind_total(rows, n, ("compiled",))
        + _kind_total(rows, n, ("gap",), with_break=False),
        compiled_work_us=_kind_total(rows, n, ("compiled",), work=True),
    )


def _resume_regions(per_call: list[CallSegments]) -> dict[str, tuple[str, ...]]:
    """For each break, the regions entered right after its gap: where execution resumes."""
    out: dict[str, set[str]] = defaultdict(set)
    for cs in per_call:
        pending: str | None = None
        for seg in cs.segments:
            if seg.kind == "gap" and seg.break_id:
                pending = seg.break_id
            elif pending and seg.kind in ("guard_lookup", "compiled") and seg.compile_id:
                out[pending].add(seg.compile_id)
                pending = None
    return {bid: tuple(sorted(cids)) for bid, cids in out.items()}


def _occurrences(per_call: list[CallSegments], capture: Capture, n: int) -> dict[str, list[float]]:
    """How often each break runs per call: region instances that end in it, counting only the
    innermost ones. An instance whose span contains another instance ending in the same break
    only leads to it: a submodule break is seen by the outer frame (whose gap runs the inner
    frame) and by the inner frame, and happens once; a helper that breaks, called three times
    from resume functions nested in each other, happens three times. A skipped root frame
    counts once."""
    values: dict[str, list[float]] = defaultdict(lambda: [0.0] * n)
    root_skip = capture.root_skip_break_id
    for index, cs in enumerate(per_call):
        ending: dict[str, list[RegionInstance]] = defaultdict(list)
        for r in cs.regions:
            frame = capture.frame(r.compile_id)
            if frame is not None and frame.end_break_id is not None:
                ending[frame.end_break_id].append(r)
        for bid, instances in ending.items():
            values[bid][index] += sum(1 for r in instances if _innermost(r, instances))
        if root_skip is not None and values[root_skip][index] == 0:
            values[root_skip][index] = 1.0
    return values


def _innermost(r: RegionInstance, instances: list[RegionInstance]) -> bool:
    end = r.start_us + r.duration_us
    return not any(
        o is not r
        and r.start_us <= o.start_us
        and o.start_us + o.duration_us <= end
        and r.compile_id in o.ancestors
        for o in instances
    )


# --- the probe --------------------------------------------------------------------------------


def _probe_capture(call: TraceEvent) -> Capture:
    """The probe's two regions as frames: the outer one ends in its break, the inner one in a
    return (the probe is compiled in-process; its compile ids are read off the trace)."""
    ids = sorted(
        {e.compile_id for e in _owners_deep(call) if e.kind == "region" and e.compile_id},
        key=lambda cid: tuple(int(p) for p in cid.split("/") if p.isdigit()),
    )
    frames = [
        FrameRecord(cid, "probe", "probe", ops=1, end_break_id="probe" if i == 0 else None)
        for i, cid in enumerate(ids)
    ]
    return Capture(frames=tuple(frames), root_compile_id=ids[0] if ids else None)


def _owners_deep(event: TraceEvent) -> list[TraceEvent]:
    out: list[TraceEvent] = []
    for owner in _owners(event):
        out.append(owner)
        out.extend(_owners_deep(owner))
    return out


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
        graph_call_us=_median(graph) * rescale,
        glue_us=_median(glue) * rescale,
        lookup_us=_median(lookup) * rescale,
        region_fixed_us=_median(fixed) * rescale,
        calls=len(graph),
        break_us=break_us,
    )


# --- the whole step ---------------------------------------------------------------------------


def attribute(
    trace: ProfileTrace, capture: Capture, unprofiled_median_ms: float | None = None
) -> AttributionResult:
    """Segment every profiled call, correct for profiler overhead, and reduce per region and
    per break. `unprofiled_median_ms` is the mode's median the segments are rescaled to."""
    notes = list(trace.notes)
    per_call = [segment_call(call, capture) for call in trace.calls]
    per_event = trace.overhead_us_per_event
    refs, source = _references(trace, len(per_call))
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
    rescale = _median(f.rescale for f in factors) if factors else 1.0
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
    reference = _median(known) if known else None
    profiled = _median(cs.total_us for cs in per_call) if per_call else None
    whole_call = None
    if per_call and trace.unprofiled_us:
        events = _median(float(c.n_events) for c in trace.calls)
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
        overhead_scale=_median(f.kept_overhead(cs) for f, cs in zip(factors, per_call, strict=True))
        if factors
        else 1.0,
        rescale=_median(f.rescale for f in factors) if factors else 1.0,
        profiled_ratio=(profiled / reference) if profiled and reference else None,
        fallback_calls=sum(f.fallback for f in factors),
        graph_call_us=probe.graph_call_us,
        glue_us=probe.glue_us,
        probe_break_us=probe.break_us,
        probe_calls=probe.calls,
        whole_call_us_per_event=whole_call,
    )

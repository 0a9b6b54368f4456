"""Attribute: turn each profiled call into ordered segments and join them to graphs and breaks.

Segment kinds (they tile the call's record exactly, nested regions carved out of their parent):
- `entry`: from the call's start to the first guard lookup/region (the torch.compile wrapper);
- `guard_lookup`: a `TorchDynamo Cache Lookup` (tagged with the region it guards);
- `compiled` (X): region X up to the end of its graph call, and all of a region that ends in a
  return (its return path is fixed region overhead);
- `gap` (X): the rest of region X when X ends in a break: the break's eager work, output
  reconstruction, the call into the resume function (nested regions excluded);
- `eager`: time under the call outside any region between regions (a skipped frame's code; its
  break id is set when the function's own frame was skipped);
- `exit`: after the last region.

Distortion: work (graph calls, top-level aten ops) keeps its profiled time less
`overhead_us_per_event` per aten event in it. The rest of the call (runtime overhead: wrappers,
guard lookups, Python) is what the profiler inflates most: its total is the unprofiled call
(timed by `profile_calls` right before the profile) minus that work, shared out by profiled
overhead time. An unprofiled call slower than the profile allows is machine drift and scales
work and overhead alike. Finally everything is rescaled to the mode's median when one is given
(the harness's, timed earlier), so the profile gives shares and the unprofiled timing totals.
"""

from __future__ import annotations

import itertools
import statistics
from collections import defaultdict
from dataclasses import dataclass, field, replace

from advisor import torch_adapter as ta
from advisor.capture import Capture
from advisor.model import Attribution, BreakRecord, CallTimeline, GraphRecord, Segment
from advisor.profile import ProfileTrace, TraceEvent, is_structural_event, median_unprofiled_us

KINDS = ("entry", "guard_lookup", "compiled", "gap", "eager", "exit")


@dataclass(frozen=True)
class RawSegment:
    kind: str
    start_us: float
    duration_us: float
    compile_id: str | None = None
    break_id: str | None = None
    n_events: int = 0  # profiler events that start inside this segment
    n_struct: int = 0  # of which structural (record_function-style, not aten ops)
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


@dataclass(frozen=True)
class AttributionResult:
    attribution: Attribution
    breaks: tuple[BreakRecord, ...]
    graphs: tuple[GraphRecord, ...]
    region_us_per_call: dict[str, float]  # compiled time per call, per compile id (median)
    gap_us_per_call: dict[str, float] = field(default_factory=dict)  # per break id (median)
    gap_work_us_per_call: dict[str, float] = field(default_factory=dict)  # aten work in gaps
    # of which compute-bound ops, which would run as the same kernels compiled
    gap_kept_us_per_call: dict[str, float] = field(default_factory=dict)
    region_count_per_call: dict[str, float] = field(default_factory=dict)  # per compile id
    graph_region_count_per_call: dict[str, float] = field(
        default_factory=dict
    )  # of which call a graph
    graph_call_us_per_call: dict[str, float] = field(default_factory=dict)  # per compile id
    region_fixed_us: dict[str, float] = field(default_factory=dict)  # per instance, non-graph
    resume_regions: dict[str, tuple[str, ...]] = field(default_factory=dict)  # per break id
    # The price of one more graph call: a trivial compiled graph's call, profiled beside the
    # workload (None without a probe in the trace).
    graph_call_fixed_us: float | None = None
    guard_lookup_us_per_call: float = 0.0
    guard_lookup_us_by_region: dict[str, float] = field(default_factory=dict)  # per instance
    guard_lookups_per_call: float = 0.0
    eager_us_per_call: float = 0.0  # eager outside regions not tied to a break
    skipped_eager_us_per_call: dict[str, float] = field(default_factory=dict)  # per break id
    entry_us_per_call: float = 0.0
    exit_us_per_call: float = 0.0
    call_us: float = 0.0  # the per-call total the segments were scaled to (or profiled median)
    profiled_call_us: float = 0.0  # median profiled call duration (inflated by the profiler)
    calibration_ratio: float | None = None  # corrected profiled total / unprofiled median
    scale: float = 1.0
    warnings: tuple[str, ...] = ()


# --- the segmenter ----------------------------------------------------------------------------


class _Segmenter:
    def __init__(self, capture: Capture | None) -> None:
        self.capture = capture
        self.root_skip = capture.root_skip_break_id if capture is not None else None
        self.segments: list[RawSegment] = []
        self.regions: list[RegionInstance] = []

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
        if _is_owner(child.name):
            continue
        if child.name.startswith("aten::"):
            end = child.start_us + child.duration_us
            out.append((child.start_us, end, ta.keeps_time_compiled(child.name)))
        else:
            out.extend(_work_intervals(child))
    return out


def _owners(event: TraceEvent) -> list[TraceEvent]:
    """The nearest structural descendants (regions, lookups, graph calls) of an event."""
    out: list[TraceEvent] = []
    for child in event.children:
        if _is_owner(child.name):
            out.append(child)
        else:
            out.extend(_owners(child))
    return out


def _is_owner(name: str) -> bool:
    return (
        name.startswith(ta.REGION_PREFIX) or name == ta.LOOKUP_EVENT or ta.is_graph_call_event(name)
    )


def _event_starts(event: TraceEvent, stop_at_owners: bool = True) -> list[tuple[float, bool]]:
    """Start times of the profiler events an owner is charged for: itself and its non-owner
    descendants (folded subtrees are counted at their start)."""
    starts = [(event.start_us, is_structural_event(event.name))]
    for child in event.children:
        if stop_at_owners and _is_owner(child.name):
            continue
        starts.extend(_event_starts(child, stop_at_owners))
    if not event.children and event.n_events > 1:
        starts.extend([(event.start_us, False)] * (event.n_events - 1))
    return starts


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
    seg = _Segmenter(capture)
    call_start, call_end = call.start_us, call.start_us + call.duration_us
    owners = _owners(call)
    events = _event_starts(call)
    work = _work_intervals(call)
    region_spans = [o for o in owners if o.name.startswith(ta.REGION_PREFIX)]
    lookups = [o for o in owners if o.name == ta.LOOKUP_EVENT]
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
        if prev.name == ta.LOOKUP_EVENT and nxt.name.startswith(ta.REGION_PREFIX):
            out[(prev.start_us + prev.duration_us, nxt.start_us)] = ta.region_compile_id(nxt.name)
    return out


def _walk_owners(seg: _Segmenter, owners: list[TraceEvent], parent: tuple[str, ...]) -> None:
    ordered = sorted(owners, key=lambda e: e.start_us)
    for i, owner in enumerate(ordered):
        start, end = owner.start_us, owner.start_us + owner.duration_us
        if owner.name == ta.LOOKUP_EVENT:
            nxt = next((o for o in ordered[i + 1 :] if o.name.startswith(ta.REGION_PREFIX)), None)
            cid = ta.region_compile_id(nxt.name) if nxt is not None else None
            inner = _owners(owner)
            for a, b in _own_intervals(start, end, inner):
                seg.emit("guard_lookup", a, b, _event_starts(owner), compile_id=cid)
            _walk_owners(seg, inner, parent)
        elif owner.name.startswith(ta.REGION_PREFIX):
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
    cid = ta.region_compile_id(region.name) or "?"
    start, end = region.start_us, region.start_us + region.duration_us
    owners = _owners(region)
    graph_calls = [o for o in owners if ta.is_graph_call_event(o.name)]
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
    inner = [o for o in owners if not ta.is_graph_call_event(o.name)]
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
                    p.work_us + s.work_us,
                    p.kept_us + s.kept_us,
                )
                continue
        out.append(s)
    return out


# --- the join ---------------------------------------------------------------------------------


def probe_graph_call_us(probe_calls: tuple[TraceEvent, ...], overhead_us: float) -> float | None:
    """Median time of the probe's graph call, corrected like the workload's graph calls (its
    profiled time less the per-event cost of the aten events inside it)."""
    values = []
    for call in probe_calls:
        graph_calls = [o for o in _owners_deep(call) if ta.is_graph_call_event(o.name)]
        for g in graph_calls:
            starts = _event_starts(g, stop_at_owners=False)
            aten_events = sum(1 for _, structural in starts if not structural)
            values.append(max(0.0, g.duration_us - aten_events * overhead_us))
    return _median(values) if values else None


def _owners_deep(event: TraceEvent) -> list[TraceEvent]:
    out: list[TraceEvent] = []
    for owner in _owners(event):
        out.append(owner)
        out.extend(_owners_deep(owner))
    return out


def _median_over_calls(values: list[float], n: int) -> float:
    """Median per call of a quantity seen in `len(values)` of `n` calls (0 in the others)."""
    return _median(values + [0.0] * (n - len(values)))


def _median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else 0.0


def attribute(
    trace: ProfileTrace, capture: Capture, unprofiled_median_ms: float | None = None
) -> AttributionResult:
    """Segment every profiled call, correct for profiler overhead, and join to the capture."""
    warnings = list(trace.warnings)
    per_call = [segment_call(call, capture) for call in trace.calls]
    overhead = trace.overhead_us_per_event or 0.0
    # The split between work and overhead is made against the unprofiled calls timed right
    # before the profile (same machine phase); the result is then rescaled to the given median
    # (the harness's, timed earlier), so drift between the two steps scales every segment alike
    # instead of landing on the overhead.
    local_us = median_unprofiled_us(trace)
    given_us = unprofiled_median_ms * 1000.0 if unprofiled_median_ms is not None else None
    unprofiled_us = local_us or given_us
    # Each profiled call's own reference: its session's unprofiled median when the profile was
    # taken in sessions (see `profile_calls`), else the one median.
    refs = (
        list(trace.call_unprofiled_us)
        if len(trace.call_unprofiled_us) == len(per_call) and all(trace.call_unprofiled_us)
        else [unprofiled_us] * len(per_call)
    )
    final_us = given_us or local_us
    rescales = [final_us / ref if final_us and ref else 1.0 for ref in refs]
    rescale = _median(rescales) if rescales else 1.0
    # Work (graph calls, aten ops) is long-lived and lightly distorted: keep its profiled time,
    # less the aten-op calibration per event. Everything else is runtime overhead (wrappers,
    # guard lookups, Python between ops), which the profiler inflates most: its total comes from
    # the unprofiled timing (the call minus its work), shared out by the profiled overhead time.
    corrected: list[list[tuple[RawSegment, float, float]]] = []  # (segment, work, overhead)
    budgets: list[float] = []
    fallbacks = 0
    for cs, ref in zip(per_call, refs, strict=True):
        work = [
            max(0.0, s.work_us - (s.n_events - s.n_struct) * overhead) if s.work_us else 0.0
            for s in cs.segments
        ]
        raw_overhead = [max(0.0, s.duration_us - s.work_us) for s in cs.segments]
        total_raw = sum(raw_overhead)
        target = ref if ref else cs.total_us
        budget = target - sum(work)
        if budget < 0.05 * target or total_raw <= 0:
            # The corrected work alone (nearly) exceeds the unprofiled call: the calibration
            # does not fit this call, so fall back to scaling every segment alike.
            fallbacks += 1
            factor = target / cs.total_us if cs.total_us > 0 else 1.0
            corrected.append(
                [(s, s.work_us * factor, (s.duration_us - s.work_us) * factor) for s in cs.segments]
            )
            budgets.append(factor)
            continue
        # The profiler only ever inflates overhead: the unprofiled overhead is at most the
        # profiled one. An unprofiled call slower than that allows is the machine drifting
        # between the two measurements, which slows everything alike: then work and overhead
        # are scaled alike, keeping the profile's split.
        if budget <= total_raw:
            factor, work_factor = budget / total_raw, 1.0
        else:
            factor = work_factor = target / (sum(work) + total_raw)
        budgets.append(factor)
        corrected.append(
            [
                (s, w * work_factor, o * factor)
                for s, w, o in zip(cs.segments, work, raw_overhead, strict=True)
            ]
        )
    corrected = [
        [(s, w * q, o * q) for s, w, o in c] if q != 1.0 else c
        for c, q in zip(corrected, rescales, strict=True)
    ]
    # A call that is nearly all work (large kernels) leaves the overhead within noise of zero,
    # and some calls fall back; that is harmless for a few calls, worth a warning for most.
    if fallbacks * 2 > len(per_call):
        warnings.append(
            f"{fallbacks} of {len(per_call)} profiled calls had more corrected work than the "
            "unprofiled call time; their segments were scaled alike (shares less reliable)"
        )
    profiled_totals = [cs.total_us for cs in per_call]
    corrected_totals = [sum(w + o for _, w, o in c) for c in corrected]
    calibration_ratio = (
        _median(profiled_totals) / unprofiled_us if unprofiled_us and profiled_totals else None
    )
    scale = _median(budgets) if budgets else 1.0
    probe_us = probe_graph_call_us(trace.probe_calls, overhead)
    graph_call_fixed = probe_us * rescale if probe_us is not None else None
    source = (
        "timed right before the profile" if local_us else "given: no unprofiled calls in the trace"
    )
    method = (
        "work (graph calls, aten ops) from the profile, corrected for "
        f"{overhead:.2f} µs per aten event ({trace.overhead_method or 'no calibration'}); "
        "runtime overhead (wrappers, guard lookups, Python) totals the unprofiled median per "
        f"call ({source}) minus that work, shared out by profiled overhead time "
        f"(x{scale:.2f}); the profiled call was {calibration_ratio or 0:.2f}x the unprofiled one"
        + (
            f"; {fallbacks} of {len(per_call)} calls, with work above the unprofiled time, "
            "scaled alike"
            if fallbacks
            else ""
        )
        if unprofiled_us
        else f"profile only, work corrected for {overhead:.2f} µs per aten event"
    )
    if abs(rescale - 1.0) > 1e-9 and final_us:
        method += (
            f"; all segments then rescaled x{rescale:.2f} (median over calls) to the mode's "
            f"median ({final_us:.1f} µs against {_median([r for r in refs if r]):.1f} µs at "
            "profile time: machine drift)"
        )
    if graph_call_fixed is not None:
        method += (
            f"; one more graph call costs {graph_call_fixed:.2f} µs (a trivial compiled graph "
            f"profiled alongside, median of {len(trace.probe_calls)} calls)"
        )

    timelines: list[CallTimeline] = []
    sums: dict[tuple[str, str | None, str | None], list[float]] = defaultdict(list)
    work_sums: dict[tuple[str, str | None, str | None], list[float]] = defaultdict(list)
    kept_sums: dict[tuple[str, str | None, str | None], list[float]] = defaultdict(list)
    covered = measured = 0.0
    for index, (cs, corr) in enumerate(zip(per_call, corrected, strict=True)):
        covered += sum(s.duration_us for s in cs.segments)
        measured += cs.total_us
        acc: dict[tuple[str, str | None, str | None], float] = defaultdict(float)
        work_acc: dict[tuple[str, str | None, str | None], float] = defaultdict(float)
        kept_acc: dict[tuple[str, str | None, str | None], float] = defaultdict(float)
        segs: list[Segment] = []
        cursor = 0.0
        for raw, work_part, overhead_part in corr:
            value = work_part + overhead_part
            work_acc[(raw.kind, raw.compile_id, raw.break_id)] += work_part
            if raw.work_us > 0:  # the compute-bound part of the work, corrected alike
                kept_acc[(raw.kind, raw.compile_id, raw.break_id)] += (
                    work_part * raw.kept_us / raw.work_us
                )
            segs.append(
                Segment(raw.kind, round(cursor, 3), round(value, 3), raw.compile_id, raw.break_id)
            )
            cursor += value
            acc[(raw.kind, raw.compile_id, raw.break_id)] += value
        for key, value in acc.items():
            sums[key].append(value)
            work_sums[key].append(work_acc[key])
            kept_sums[key].append(kept_acc[key])
        timelines.append(CallTimeline(index, round(cursor, 3), tuple(segs)))
    n = len(per_call)

    med = {k: _median_over_calls(v, n) for k, v in sums.items()}
    med_work = {k: _median_over_calls(v, n) for k, v in work_sums.items()}
    graph_call: dict[str, float] = defaultdict(float)
    gap_work: dict[str, float] = defaultdict(float)
    gap_kept: dict[str, float] = defaultdict(float)
    for (kind, cid, bid), value in med_work.items():
        if kind == "compiled" and cid:
            graph_call[cid] += value
        elif kind in ("gap", "eager") and bid:
            gap_work[bid] += value
            gap_kept[bid] += _median_over_calls(kept_sums[(kind, cid, bid)], n)
    region_us: dict[str, float] = defaultdict(float)
    gap_us: dict[str, float] = defaultdict(float)
    skipped_us: dict[str, float] = defaultdict(float)
    lookup = eager = entry = exit_ = 0.0
    lookup_by_region: dict[str, float] = defaultdict(float)
    for (kind, cid, bid), value in med.items():
        if kind == "compiled" and cid:
            region_us[cid] += value
        elif kind == "gap" and bid:
            gap_us[bid] += value
        elif kind == "gap" and cid:
            region_us[cid] += value
        elif kind == "guard_lookup":
            lookup += value
            if cid:
                lookup_by_region[cid] += value
        elif kind == "eager" and bid:
            skipped_us[bid] += value
        elif kind == "eager":
            eager += value
        elif kind == "entry":
            entry += value
        elif kind == "exit":
            exit_ += value

    counts = _region_counts(per_call, n)
    occurrences = _break_occurrences(per_call, capture, n)
    resumes = _resume_regions(per_call)
    fixed = {
        cid: max(0.0, region_us[cid] / counts[cid] - graph_call.get(cid, 0.0) / counts[cid])
        for cid in region_us
        if counts.get(cid) and graph_call.get(cid, 0.0) > 0
    }
    lookups_per_call = _median(
        [float(sum(1 for s in cs.segments if s.kind == "guard_lookup")) for cs in per_call]
    )

    breaks = tuple(
        _fill_break(
            b, occurrences.get(b.id, 0.0), gap_us.get(b.id, 0.0) + skipped_us.get(b.id, 0.0)
        )
        for b in capture.breaks
    )
    seen = {r.compile_id for cs in per_call for r in cs.regions}
    unknown = sorted(seen - {f.compile_id for f in capture.frames})
    if unknown:
        warnings.append(f"regions in the profile that the capture did not see: {unknown}")
    coverage = covered / measured if measured > 0 else None
    attribution = Attribution(
        coverage=round(coverage, 4) if coverage is not None else None,
        method=method,
        profiled_calls=n,
        profiler_overhead_us_per_event=overhead,
        calls=tuple(timelines),
    )
    return AttributionResult(
        attribution=attribution,
        breaks=breaks,
        graphs=capture.graphs,
        region_us_per_call=dict(region_us),
        gap_us_per_call=dict(gap_us),
        region_count_per_call=counts,
        graph_region_count_per_call=_region_counts(per_call, n, graph_only=True),
        graph_call_us_per_call=dict(graph_call),
        gap_work_us_per_call=dict(gap_work),
        gap_kept_us_per_call=dict(gap_kept),
        region_fixed_us=fixed,
        resume_regions=resumes,
        graph_call_fixed_us=graph_call_fixed,
        guard_lookup_us_per_call=lookup,
        guard_lookup_us_by_region={
            cid: value / counts[cid] for cid, value in lookup_by_region.items() if counts.get(cid)
        },
        guard_lookups_per_call=lookups_per_call,
        eager_us_per_call=eager,
        skipped_eager_us_per_call=dict(skipped_us),
        entry_us_per_call=entry,
        exit_us_per_call=exit_,
        call_us=(given_us or unprofiled_us) if unprofiled_us else _median(corrected_totals),
        profiled_call_us=_median(profiled_totals),
        calibration_ratio=calibration_ratio,
        scale=scale,
        warnings=tuple(warnings),
    )


def _region_counts(
    per_call: list[CallSegments], n: int, graph_only: bool = False
) -> dict[str, float]:
    counts: dict[str, list[float]] = defaultdict(list)
    for cs in per_call:
        local: dict[str, float] = defaultdict(float)
        for r in cs.regions:
            if r.calls_graph or not graph_only:
                local[r.compile_id] += 1
        for cid, c in local.items():
            counts[cid].append(c)
    return {cid: _median_over_calls(v, n) for cid, v in counts.items()}


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


def _break_occurrences(per_call: list[CallSegments], capture: Capture, n: int) -> dict[str, float]:
    """How often each break runs per call: region instances that end in it, counting only the
    innermost ones. An instance whose span contains another instance ending in the same break
    only leads to it: a submodule break is seen by the outer frame (whose gap runs the inner
    frame) and by the inner frame, and happens once; a helper that breaks, called three times
    from resume functions nested in each other, happens three times. A skipped root frame
    counts once."""
    values: dict[str, list[float]] = defaultdict(list)
    root_skip = capture.root_skip_break_id
    for cs in per_call:
        ending: dict[str, list[RegionInstance]] = defaultdict(list)
        for r in cs.regions:
            frame = capture.frame(r.compile_id)
            if frame is not None and frame.end_break_id is not None:
                ending[frame.end_break_id].append(r)
        local: dict[str, float] = defaultdict(float)
        for bid, instances in ending.items():
            for r in instances:
                end = r.start_us + r.duration_us
                contains_same = any(
                    o is not r
                    and r.start_us <= o.start_us
                    and o.start_us + o.duration_us <= end
                    and r.compile_id in o.ancestors
                    for o in instances
                )
                if not contains_same:
                    local[bid] += 1
        if root_skip is not None and local.get(root_skip, 0) == 0:
            local[root_skip] = 1.0
        for bid, v in local.items():
            values[bid].append(v)
    return {bid: _median(v + [0.0] * (n - len(v))) for bid, v in values.items()}


def _fill_break(b: BreakRecord, occurrences: float, gap_us: float) -> BreakRecord:
    return replace(b, occurrences_per_call=occurrences, gap_ms=round(gap_us / 1000.0, 6))

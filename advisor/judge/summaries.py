"""Reduce: the corrected segment table as medians per call (step 3 of
`advisor.judge.attribute`): per region (instances, graph time, fixed overhead per instance,
guard lookup), per break (occurrences, owned time, its tensor work and compute-bound part), and
the call's totals outside them.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from advisor.core.artifacts import Capture
from advisor.judge.correct import SegmentRow
from advisor.judge.segments import CallSegments, RawSegment, RegionInstance


@dataclass(frozen=True)
class RegionSummary:
    """One compile id's region, per call (medians over the profiled calls)."""

    compile_id: str
    instances: float
    graph_instances: float  # instances that called a graph
    time_us: float  # compiled segments (and gaps of a region that ends in no known break)
    graph_call_us: float  # work inside its graph calls
    lookup_us: float  # guard lookups that enter it
    # Training: its graph's backward, run by the autograd engine (per call): the hop into it
    # (engine node, AOTAutograd's wrapper) and how many backward graph calls there were.
    backward_hop_us: float = 0.0
    backward_calls: float = 0.0
    graph_calls: float = 0.0  # graph-call events inside its instances, per call

    @property
    def graph_calls_per_instance(self) -> float | None:
        """Graph calls per instance that calls a graph: 1, or the pieces of a graph split on
        purpose (DDP's optimizer); None when no instance called a graph."""
        return self.graph_calls / self.graph_instances if self.graph_instances else None

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

    @property
    def backward_hop_per_call_us(self) -> float | None:
        """Per backward graph call: the autograd engine's hop into it; None without one."""
        return self.backward_hop_us / self.backward_calls if self.backward_calls else None


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
    backward_us: float = 0.0  # training: backward graph calls and the autograd engine
    backward_graph_us: float = 0.0  # of which the compiled backward graphs' calls
    optimizer_us: float = 0.0  # training: optimizer step and zero_grad


def median_or_zero(values: Iterable[float]) -> float:
    """The median of the values, 0 when there are none."""
    listed = list(values)
    return float(statistics.median(listed)) if listed else 0.0


RowValue = Callable[[SegmentRow], tuple[str | None, float]]
SEGMENT_KINDS = (
    "entry", "guard_lookup", "compiled", "gap", "eager", "exit", "backward", "autograd",
    "optimizer",
)  # fmt: skip


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
    hop = _per_call(
        rows, n, lambda r: (r.compile_id if r.kind == "autograd" else None, r.duration_us)
    )
    backward = _per_call(rows, n, lambda r: (r.compile_id if r.kind == "backward" else None, 1.0))
    counts = _instance_counts(per_call, n, graph_only=False)
    graph_counts = _instance_counts(per_call, n, graph_only=True)
    calls = _graph_call_counts(per_call, n)
    return {
        cid: RegionSummary(
            cid,
            median_or_zero(counts[cid]),
            median_or_zero(graph_counts.get(cid, [0.0] * n)),
            median_or_zero(time.get(cid, [0.0])),
            median_or_zero(graph.get(cid, [0.0])),
            median_or_zero(lookup.get(cid, [0.0])),
            median_or_zero(hop.get(cid, [0.0])),
            median_or_zero(backward.get(cid, [0.0])),
            median_or_zero(calls.get(cid, [0.0] * n)),
        )
        for cid in counts
    }


def _graph_call_counts(per_call: list[CallSegments], n: int) -> dict[str, list[float]]:
    """Per compile id and call: the graph-call events inside its region instances."""
    counts: dict[str, list[float]] = defaultdict(lambda: [0.0] * n)
    for index, cs in enumerate(per_call):
        for r in cs.regions:
            counts[r.compile_id][index] += r.graph_calls
    return counts


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
            median_or_zero(occurrences.get(site.id, [0.0] * n)),
            median_or_zero(values),
            median_or_zero(work.get(site.id, [0.0])),
            median_or_zero(kept.get(site.id, [0.0])),
            tuple(round(v, 3) for v in values),
            resumes.get(site.id, ()),
            median_or_zero(entered.get(site.id, [0.0])),
            median_or_zero(entered_graph.get(site.id, [0.0])),
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

    return median_or_zero(_per_call(rows, n, pick).get("all", [0.0] * n))


def _totals(rows: list[SegmentRow], per_call: list[CallSegments], n: int) -> Totals:
    lookups = [float(sum(1 for s in cs.segments if s.kind == "guard_lookup")) for cs in per_call]
    return Totals(
        call_us=_kind_total(rows, n, SEGMENT_KINDS),
        entry_us=_kind_total(rows, n, ("entry",)),
        exit_us=_kind_total(rows, n, ("exit",)),
        eager_us=_kind_total(rows, n, ("eager",), with_break=False),
        lookup_us=_kind_total(rows, n, ("guard_lookup",)),
        lookups=median_or_zero(lookups),
        compiled_us=_kind_total(rows, n, ("compiled",))
        + _kind_total(rows, n, ("gap",), with_break=False),
        compiled_work_us=_kind_total(rows, n, ("compiled",), work=True),
        backward_us=_kind_total(rows, n, ("backward", "autograd")),
        backward_graph_us=_kind_total(rows, n, ("backward",)),
        optimizer_us=_kind_total(rows, n, ("optimizer",)),
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

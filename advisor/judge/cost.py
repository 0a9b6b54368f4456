"""The cost model: what each root cause costs per call, split by what a fix removes.

For an entry that owns extra regions R (R_graph of them calling a graph), runs N times per call
and owns the measured eager time G (its gaps, or a skipped frame's eager time), of which T is
eager aten work and K of that compute-bound:

    share    = R x guard lookup + R_graph x (region overhead + graph call) + G
    overhead = R x guard lookup + R_graph x (region overhead + graph call) + N x glue
    tensor   = T          (K of it: matmul, conv, attention... run as the same kernels compiled)
    python   = G - T - N x glue   (the code at the line and below)

- guard lookup, region overhead: the fixed price of one more compiled region, measured in the
  profile on the regions either side of the break, the lighter side (merging two regions saves
  a region's fixed part, not what grows with its inputs, which the merged region still pays).
  For a skipped frame, whose regions each keep their own inputs' guards when the frame compiles
  as one, the probe's trivial region (see below).
- graph call: one more call of a compiled graph (Python wrapper, argument checks, output
  allocation, kernel launch), measured on the probe: two tiny graphs split by one
  `graph_break()`, compiled like the workload and profiled beside it; capped by the workload's
  cheapest graph call per instance.
- glue: the probe's gap: output reconstruction and the call into the resume function, the
  part of a gap that goes with the break whatever the line does.
- a floor: the probe is also timed unprofiled against the same ops with no break; that
  difference is what one break costs on this machine, and one extra region calling a graph is
  never priced below it (the profile's split of small regions is the least certain part).
- For a skipped frame, the frame's Python (module calls, the interpreter between ops) is all
  overhead: it disappears once the frame compiles. Its own statement's time is not separable.

Savings (see `Savings`): isolate (move it out of the compiled code, reorder it, a small disabled
boundary) removes the overhead only, the code still runs elsewhere; rewrite (tensor code) also
removes the Python and the fusible tensor work (T - K); delete removes all of it. For a skipped
frame, isolating the break lets the frame compile (its tensor work fuses) but keeps one break.

The entries own disjoint time by construction (see `rootcause`); their fixed prices are scaled
down alike where they would add up to more than the compiled time (regions, graph calls, guard
lookups) the profile measured (`CostTerms.overhead_cap`). Not modelled: kernels that fuse across the
former boundary once the break is gone. How close the estimates land is measured by
`benchmarks/accuracy.py` (results in reports/benchmarks/accuracy).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

from advisor.core.model import CostParts, CostTerms, Savings, WhatIf
from advisor.judge.attribute import AttributionResult
from advisor.judge.rootcause import RootCause
from advisor.judge.summaries import SiteSummary


@dataclass(frozen=True)
class Prices:
    """Workload-wide measured prices (µs), the fallback where a break's own sides are unknown."""

    guard_lookup_us: float
    region_overhead_us: float
    region_overhead_spread_us: float
    graph_call_us: float
    glue_us: float
    probe_lookup_us: float | None = None
    probe_region_us: float | None = None
    break_us: float | None = None  # one whole break, unprofiled (the probe with and without)
    # Guard evaluation per region entered, measured: the warm default mode timed with and
    # without its guards, over the lookups per call (None: not measured; the profile's then).
    measured_lookup_us: float | None = None


def measured_lookup_us(
    att: AttributionResult, guards: WhatIf | None, step_ms: float
) -> float | None:
    """One guard lookup's price from the guard what-if: its saving, scaled from its own
    baseline to the default step, over the lookups per call."""
    if guards is None or guards.status != "measured" or not att.totals.lookups:
        return None
    if guards.saving_ms is None or not guards.baseline_ms or guards.saving_ms <= 0:
        return None
    scaled_us = guards.saving_ms / guards.baseline_ms * step_ms * 1e3
    return scaled_us / att.totals.lookups


def prices(att: AttributionResult, lookup_us: float | None = None) -> Prices:
    fixed = [r.fixed_us for r in att.regions.values() if r.fixed_us is not None]
    lookups = [r.lookup_per_instance_us for r in att.regions.values() if r.lookup_per_instance_us]
    region = statistics.median(fixed) if fixed else 0.0
    spread = _iqr(fixed) / 2 if len(fixed) > 1 else 0.0
    # per graph call: a region whose graph was split on purpose calls several per instance
    per_instance_graph = [
        r.graph_call_us / max(r.graph_calls, r.graph_instances)
        for r in att.regions.values()
        if r.graph_instances
    ]
    probe_graph = att.probe.graph_call_us
    candidates = [v for v in (probe_graph, *per_instance_graph) if v is not None and v > 0]
    graph_call = min(candidates) if probe_graph is not None and candidates else 0.0
    return Prices(
        guard_lookup_us=statistics.median(lookups) if lookups else 0.0,
        region_overhead_us=region,
        region_overhead_spread_us=spread,
        graph_call_us=graph_call,
        glue_us=att.probe.glue_us or 0.0,
        probe_lookup_us=att.probe.lookup_us,
        probe_region_us=att.probe.region_fixed_us,
        break_us=att.probe.break_us,
        measured_lookup_us=lookup_us,
    )


def _iqr(values: list[float]) -> float:
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[2] - q[0]


def terms_for(root: RootCause, att: AttributionResult, p: Prices) -> CostTerms:
    """The measured terms of one entry: its site's summary plus its causes' regions."""
    own = att.sites.get(root.site.id) or SiteSummary(root.site.id, 0.0, 0.0, 0.0, 0.0)
    regions = own.regions + sum(_summary(att, c.id).regions for c in root.causes)
    graph_regions = own.graph_regions + sum(_summary(att, c.id).graph_regions for c in root.causes)
    lookup, overhead = _fixed_prices(root, own, att, p)
    if p.measured_lookup_us is not None:
        lookup = p.measured_lookup_us
    glue = 0.0 if root.skipped_frame else p.glue_us
    if p.break_us is not None:  # never below what one break costs unprofiled
        overhead = max(overhead, p.break_us - lookup - glue - p.graph_call_us)
    work = min(own.work_us, own.owned_us)
    hop = _backward_hop(root, own, att)
    return CostTerms(
        regions=regions,
        graph_regions=graph_regions,
        backward_graphs=graph_regions if hop is not None else 0.0,
        backward_hop_us=hop or 0.0,
        guard_lookup_us=lookup,
        region_overhead_us=overhead,
        graph_call_us=p.graph_call_us,
        glue_us=glue,
        gap_us=own.owned_us,
        tensor_work_us=work,
        kept_us=min(own.kept_us, work),
        spread_us=math.hypot(_spread(own.per_call_us), graph_regions * p.region_overhead_spread_us),
        skipped_frame=root.skipped_frame,
        guard_basis="measured" if p.measured_lookup_us is not None else "profile",
    )


def _backward_hop(root: RootCause, own: SiteSummary, att: AttributionResult) -> float | None:
    """Training: the autograd engine's hop into one backward graph, the lighter side's; None
    when the graphs on either side of the break have no backward (inference)."""
    before = [att.regions[c] for c in root.site.compile_ids if c in att.regions]
    after = [att.regions[c] for c in own.resume_regions if c in att.regions]
    hops = [r.backward_hop_per_call_us for r in (*before, *after)]
    if not any(h is not None for h in hops):
        return None
    return _lighter(before, after, lambda r: r.backward_hop_per_call_us, 0.0)


def _summary(att: AttributionResult, site_id: str) -> SiteSummary:
    return att.sites.get(site_id) or SiteSummary(site_id, 0.0, 0.0, 0.0, 0.0)


def _spread(values: tuple[float, ...]) -> float:
    return _iqr(list(values)) / 2 if len(values) > 1 else 0.0


def _fixed_prices(
    root: RootCause, own: SiteSummary, att: AttributionResult, p: Prices
) -> tuple[float, float]:
    """(guard lookup, region overhead) per extra region for this entry."""
    if root.skipped_frame:
        lookup = p.probe_lookup_us if p.probe_lookup_us is not None else p.guard_lookup_us
        region = p.probe_region_us if p.probe_region_us is not None else p.region_overhead_us
        return lookup, region
    before = [att.regions[c] for c in root.site.compile_ids if c in att.regions]
    after = [att.regions[c] for c in own.resume_regions if c in att.regions]
    return (
        _lighter(before, after, lambda r: r.lookup_per_instance_us, p.guard_lookup_us),
        _lighter(before, after, lambda r: r.fixed_us, p.region_overhead_us),
    )


def _lighter(before, after, value, fallback: float) -> float:  # type: ignore[no-untyped-def]
    """The lighter side's median value; the fallback when one side is unknown."""
    sides = []
    for side in (before, after):
        values = [v for v in (value(r) for r in side) if v is not None]
        if not values:
            return fallback
        sides.append(statistics.median(values))
    return min(sides)


def cap_to_profile(terms: list[CostTerms], att: AttributionResult) -> list[CostTerms]:
    """Scale the entries' fixed prices down alike where they would add up to more than the
    compiled time per call (regions, their graph calls and guard lookups) the profile measured:
    the time they stand for lies there, so the ledger still adds up."""
    charged = sum(t.fixed_us for t in terms)
    hops = att.totals.backward_us - att.totals.backward_graph_us
    available = att.totals.lookup_us + att.totals.compiled_us + max(hops, 0.0)
    if charged <= max(available, 0.0) or charged <= 0:
        return terms
    cap = max(available, 0.0) / charged
    return [
        replace(
            t,
            guard_lookup_us=t.guard_lookup_us * cap,
            region_overhead_us=t.region_overhead_us * cap,
            graph_call_us=t.graph_call_us * cap,
            backward_hop_us=t.backward_hop_us * cap,
            overhead_cap=cap,
        )
        for t in terms
    ]


def parts_of(terms: CostTerms, occurrences: float) -> CostParts:
    """Split the entry's share into overhead, tensor work and Python work (ms per call)."""
    fixed = terms.fixed_us
    rest = max(0.0, terms.gap_us - terms.tensor_work_us)
    if terms.skipped_frame:
        overhead, python = fixed + rest, 0.0
    else:
        glue = min(terms.glue_us * occurrences, rest)
        overhead, python = fixed + glue, rest - glue
    return CostParts(
        overhead_ms=overhead / 1e3,
        tensor_work_ms=terms.tensor_work_us / 1e3,
        kept_ms=terms.kept_us / 1e3,
        python_work_ms=python / 1e3,
    )


def one_break_us(terms: CostTerms) -> float:
    """The fixed price of a single break with these terms: a region with a graph, its lookup."""
    return terms.guard_lookup_us + terms.region_overhead_us + terms.graph_call_us + terms.glue_us


def savings_of(parts: CostParts, terms: CostTerms, fixes: tuple[str, ...]) -> Savings:
    """What each applicable fix saves per call (ms)."""
    fusible = parts.tensor_work_ms - parts.kept_ms
    rewrite = parts.overhead_ms + parts.python_work_ms + fusible
    if terms.skipped_frame:
        isolate = max(0.0, parts.overhead_ms - one_break_us(terms) / 1e3) + fusible
    else:
        isolate = parts.overhead_ms
    values = {
        "isolate": isolate,
        "rewrite": rewrite,
        "delete": parts.overhead_ms + parts.python_work_ms + parts.tensor_work_ms,
    }
    return Savings(
        isolate=values["isolate"] if "isolate" in fixes else None,
        rewrite=values["rewrite"] if "rewrite" in fixes else None,
        delete=values["delete"] if "delete" in fixes else None,
    )


def saving_for(savings: Savings, fix: str) -> float | None:
    return {
        "isolate": savings.isolate,
        "rewrite": savings.rewrite,
        "delete": savings.delete,
    }.get(fix)

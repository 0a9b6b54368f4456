"""Advice: judge once, over every measurement, what each root cause costs and what to do.

Inputs: the attribution (segments reduced per region and break), the capture (sites, frames),
the modes (eager, default, fullgraph), the measured what-ifs and the recompiles. Outputs:
ranked `BreakEntry`s with their cost terms, parts, savings and `Decision` (`decide`); the
`Ledger` (`ledger`); the `Action`s (`actions`); recompile advice. Numbers only: the renderers
write the sentences.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.core import stats
from advisor.core.artifacts import Capture
from advisor.core.kinds import WhatIfKind
from advisor.core.model import (
    Action,
    BreakEntry,
    Ledger,
    ModeResult,
    Note,
    RecompileAdvice,
    RecompileRecord,
    WhatIf,
)
from advisor.core.taxonomy import category_for
from advisor.judge import cost
from advisor.judge.actions import build_actions
from advisor.judge.attribute import AttributionResult
from advisor.judge.decide import Step, decide, share_measured_savings
from advisor.judge.ledger import build_ledger
from advisor.judge.measured import in_default_frame, measured_steps, what_if_with_run_spread
from advisor.judge.rootcause import RootCause, root_causes


@dataclass(frozen=True)
class Advice:
    breaks: tuple[BreakEntry, ...]
    ledger: Ledger | None
    actions: tuple[Action, ...]
    recompiles: tuple[RecompileAdvice, ...]
    notes: tuple[Note, ...] = ()


def step_of(default: ModeResult, ignore_share: float, min_effect: float = 0.0) -> Step:
    assert default.latency is not None
    lat = default.latency
    noise = stats.median_noise(lat.samples_ms)
    if lat.replication is not None and lat.ci_ms is not None:
        noise = (lat.ci_ms[1] - lat.ci_ms[0]) / 2  # the spread across its processes
    median = lat.median_ms
    return Step(median, noise, ignore_share * median, default, min_effect * median)


def advise(
    att: AttributionResult,
    capture: Capture,
    modes: dict[str, ModeResult],
    what_ifs: tuple[WhatIf, ...] = (),
    ignore_share: float = 0.01,
    min_effect: float = 0.0,
    run_spread: float | None = None,
) -> Advice:
    """`run_spread`: how far a saving moves between runs beyond its waves
    (`policy.saving_spread`), so that every saving's interval is where a rerun would put it;
    None keeps each saving's interval as its own run gave it."""
    step = step_of(modes["default"], ignore_share, min_effect)
    raw_what_ifs = tuple(in_default_frame(w, step.median_ms) for w in what_ifs)
    what_ifs = tuple(what_if_with_run_spread(w, step.median_ms, run_spread) for w in raw_what_ifs)
    roots = root_causes(capture, att.sites)
    guards = next((w for w in what_ifs if w.kind == WhatIfKind.GUARDS), None)
    lookup_us = cost.measured_lookup_us(att, guards, step.median_ms)
    entries = [decide(e, step, what_ifs) for e in estimate_entries(roots, att, lookup_us)]
    entries = share_measured_savings(entries, what_ifs, step)
    ranked = tuple(sorted(entries, key=lambda e: (-e.cost_ms, e.id)))
    ids = frozenset(e.id for e in ranked)
    steps = measured_steps(modes, raw_what_ifs, ids, min_effect, run_spread)
    ledger = build_ledger(ranked, att, modes, steps)
    recompiles = recompile_advice(capture.recompiles)
    actions = build_actions(ranked, steps, ledger, recompiles, step)
    markers = any(r.fixed_us is not None for r in att.regions.values())
    notes = [] if markers or not ranked else [Note("no_graph_call_markers")]
    return Advice(ranked, ledger, actions, recompiles, tuple(notes))


# --- estimates --------------------------------------------------------------------------------


def estimate_entries(
    roots: list[RootCause], att: AttributionResult, lookup_us: float | None = None
) -> list[BreakEntry]:
    p = cost.prices(att, lookup_us)
    terms = cost.cap_to_profile([cost.terms_for(r, att, p) for r in roots], att)
    out = []
    for root, t in zip(roots, terms, strict=True):
        summary = att.sites.get(root.site.id)
        occurrences = summary.occurrences if summary else 0.0
        parts = cost.parts_of(t, occurrences)
        category = category_for(root.site)
        out.append(
            BreakEntry(
                id=root.site.id,
                site=root.site,
                causes=root.causes,
                occurrences_per_call=occurrences,
                terms=t,
                parts=parts,
                savings=cost.savings_of(parts, t, category.fixes),
                cost_uncertainty_ms=t.spread_us / 1e3,
            )
        )
    return out


# --- recompiles -------------------------------------------------------------------------------


def recompile_advice(recompiles: tuple[RecompileRecord, ...]) -> tuple[RecompileAdvice, ...]:
    """The recompiles the workload caused (not a mode's own backend taking over a cached
    entry), each with its cause as the capture classified it."""
    return tuple(
        RecompileAdvice(r.compile_id, r.function, r.reason, r.cause, r.dim, r.compile_s)
        for r in recompiles
        if not r.backend_switch
    )

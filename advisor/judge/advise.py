"""Advice: judge once, over every measurement, what each root cause costs and what to do.

Inputs: the attribution (segments reduced per region and break), the capture (sites, frames),
the modes (eager, default, fullgraph), the measured what-ifs and the recompiles. Outputs:
ranked `BreakEntry`s with their cost terms, parts, savings and `Decision`; the `Ledger`; the
`Action`s; recompile advice. Numbers only: the renderers write the sentences.

Measured truth first:
- a what-if that removes an entry's break cleanly (no new break, outputs match eager) with a
  saving beyond its noise decides that entry: its saving is the measured one (shared in
  proportion to the estimates when one knob removes several entries), in library code too;
- a what-if that removes or moves the break with no saving beyond noise bounds the entry's
  saving by the interval's upper end;
- where the estimate and the measurement disagree beyond noise, the miss is kept
  (`Decision.estimate_miss`, `Ledger.projection_miss`);
- fullgraph=True that compiled and matched eager is the measured all-fixed step.
An entry is `ignore` when its saving is below `ignore_share` of the step or below the noise of
the step's median (or of the estimate), else its category's action decides rewrite or isolate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from advisor.core import stats
from advisor.core.artifacts import Capture
from advisor.core.model import (
    Action,
    BreakEntry,
    Decision,
    Ledger,
    ModeResult,
    Note,
    RecompileAdvice,
    RecompileRecord,
    WhatIf,
)
from advisor.core.taxonomy import category_for, in_library
from advisor.judge import cost
from advisor.judge.attribute import AttributionResult
from advisor.judge.rootcause import RootCause, root_causes


@dataclass(frozen=True)
class Advice:
    breaks: tuple[BreakEntry, ...]
    ledger: Ledger | None
    actions: tuple[Action, ...]
    recompiles: tuple[RecompileAdvice, ...]
    notes: tuple[Note, ...] = ()


@dataclass(frozen=True)
class Step:
    """The default-mode step the entries are judged against."""

    median_ms: float
    noise_ms: float  # half-width of the median's 95% interval
    threshold_ms: float  # ignore_share of the median


def step_of(default: ModeResult, ignore_share: float) -> Step:
    assert default.latency is not None
    lat = default.latency
    return Step(lat.median_ms, stats.median_noise(lat.samples_ms), ignore_share * lat.median_ms)


def advise(
    att: AttributionResult,
    capture: Capture,
    modes: dict[str, ModeResult],
    what_ifs: tuple[WhatIf, ...] = (),
    ignore_share: float = 0.01,
) -> Advice:
    default = modes["default"]
    step = step_of(default, ignore_share)
    roots = root_causes(capture, att.sites)
    entries = estimate_entries(roots, att)
    entries = [decide(e, step, what_ifs) for e in entries]
    entries = _share_knob_savings(entries, what_ifs, step)
    ranked = tuple(sorted(entries, key=lambda e: (-e.cost_ms, e.id)))
    ledger = build_ledger(ranked, att, modes)
    recompiles = recompile_advice(capture.recompiles)
    actions = build_actions(ranked, what_ifs, ledger, recompiles, step)
    markers = any(r.fixed_us is not None for r in att.regions.values())
    notes = [] if markers or not ranked else [Note("no_graph_call_markers")]
    return Advice(ranked, ledger, actions, recompiles, tuple(notes))


# --- estimates --------------------------------------------------------------------------------


def estimate_entries(roots: list[RootCause], att: AttributionResult) -> list[BreakEntry]:
    p = cost.prices(att)
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


# --- decisions --------------------------------------------------------------------------------


def decide(entry: BreakEntry, step: Step, what_ifs: tuple[WhatIf, ...]) -> BreakEntry:
    category = category_for(entry.site)
    fix = category.fix
    library = in_library(entry.site)
    estimate = cost.saving_for(entry.savings, fix) or 0.0
    decision = Decision(
        verdict="ignore",
        category=category.key,
        fix=fix,
        basis="estimate",
        saving_ms=estimate,
        threshold_ms=step.threshold_ms,
        noise_ms=max(step.noise_ms, entry.cost_uncertainty_ms),
        reason="above",
        library=library,
    )
    knob = _what_if_for(entry, what_ifs)
    if knob is not None:
        decision = _with_what_if(decision, entry, knob)
    decision = replace(
        decision,
        verdict=_verdict(decision, category.action, entry),
        reason=_reason(decision, entry),
    )
    return replace(
        entry,
        decision=decision,
        cost_ms=decision.saving_ms,
        cost_share=decision.saving_ms / step.median_ms if step.median_ms > 0 else None,
        what_if_knob=knob.knob if knob is not None else None,
    )


def _what_if_for(entry: BreakEntry, what_ifs: tuple[WhatIf, ...]) -> WhatIf | None:
    ids = {entry.id, *(c.id for c in entry.causes)}
    return next((w for w in what_ifs if ids & set(w.targets)), None)


def _with_what_if(decision: Decision, entry: BreakEntry, w: WhatIf) -> Decision:
    if w.status != "measured" or w.saving_ms is None or w.saving_ci_ms is None:
        return replace(decision, knob=w.knob, knob_outcome="failed")
    removed = entry.id in w.removed
    outcome = "kept" if not removed else ("moved" if w.new_breaks else "removed")
    low, high = w.saving_ci_ms
    decision = replace(decision, knob=w.knob, knob_outcome=outcome)
    if not removed or w.matches_eager is False:
        return decision
    if w.new_breaks:
        # Moved: the variant breaks again nearby, so it prices the knob, not a fix that
        # removes the break; it neither confirms nor bounds that fix's estimate.
        return replace(decision, measured_ms=w.saving_ms, measured_ci_ms=w.saving_ci_ms)
    estimate = cost.saving_for(entry.savings, w.fix) or 0.0
    if low > 0 and w.clean:
        miss = _miss(estimate, w.saving_ms, (high - low) / 2)
        return replace(
            decision,
            fix="knob",
            basis="measured",
            saving_ms=max(w.saving_ms, 0.0),
            measured_ms=w.saving_ms,
            measured_ci_ms=w.saving_ci_ms,
            noise_ms=max(decision.noise_ms, (high - low) / 2),
            estimate_miss=miss,
        )
    if low <= 0:  # removed or moved, and no saving beyond noise: it bounds the saving
        bound = max(0.0, high)
        return replace(
            decision,
            basis="bounded" if decision.saving_ms > bound else decision.basis,
            saving_ms=min(decision.saving_ms, bound),
            measured_ms=w.saving_ms,
            measured_ci_ms=w.saving_ci_ms,
            estimate_miss=_miss(estimate, w.saving_ms, (high - low) / 2),
        )
    return replace(decision, measured_ms=w.saving_ms, measured_ci_ms=w.saving_ci_ms)


def _miss(estimate: float, measured: float, noise: float) -> float | None:
    """estimate / measured - 1 when they differ by more than the noise (None when they agree,
    or when the measurement is too close to zero to divide by)."""
    if abs(estimate - measured) <= noise:
        return None
    if measured <= noise:
        return None
    return estimate / measured - 1.0


def _verdict(decision: Decision, action: str, entry: BreakEntry) -> str:
    if _reason(decision, entry) != "above":
        return "ignore"
    if decision.basis == "measured":
        return action
    if decision.library:
        return "isolate"  # the line that breaks is not the user's to rewrite
    if entry.terms.skipped_frame:
        return "rewrite"
    return action


def _reason(decision: Decision, entry: BreakEntry) -> str:
    if entry.occurrences_per_call == 0 and entry.terms.gap_us == 0 and decision.basis == "estimate":
        return "never_ran"
    if decision.saving_ms < decision.threshold_ms:
        return "below_share"
    if decision.saving_ms < decision.noise_ms:
        return "below_noise"
    return "above"


def _share_knob_savings(
    entries: list[BreakEntry], what_ifs: tuple[WhatIf, ...], step: Step
) -> list[BreakEntry]:
    """One knob that removed several entries measured their saving together: share it out in
    proportion to their estimates, and say with whom."""
    out = list(entries)
    for w in what_ifs:
        group = [i for i, e in enumerate(out) if _measured_by(e, w)]
        if len(group) < 2 or w.saving_ms is None:
            continue
        estimates = [cost.saving_for(out[i].savings, w.fix) or 0.0 for i in group]
        total = sum(estimates)
        for i, estimate in zip(group, estimates, strict=True):
            share = estimate / total if total > 0 else 1.0 / len(group)
            out[i] = _with_share(out[i], w.saving_ms * share, estimate, share, group, out, step)
    return out


def _measured_by(entry: BreakEntry, w: WhatIf) -> bool:
    return (
        entry.decision is not None
        and entry.decision.knob == w.knob
        and entry.decision.basis == "measured"
    )


def _with_share(
    entry: BreakEntry,
    measured: float,
    estimate: float,
    share: float,
    group: list[int],
    entries: list[BreakEntry],
    step: Step,
) -> BreakEntry:
    assert entry.decision is not None
    saving = max(measured, 0.0)
    decision = replace(
        entry.decision,
        saving_ms=saving,
        measured_ms=measured,
        shared_with=tuple(entries[j].id for j in group if entries[j].id != entry.id),
        estimate_miss=_miss(estimate, measured, entry.decision.noise_ms * share),
    )
    return replace(
        entry,
        decision=decision,
        cost_ms=saving,
        cost_share=saving / step.median_ms if step.median_ms > 0 else None,
    )


# --- the ledger -------------------------------------------------------------------------------


def build_ledger(
    entries: tuple[BreakEntry, ...], att: AttributionResult, modes: dict[str, ModeResult]
) -> Ledger:
    default = modes["default"]
    assert default.latency is not None
    step_ms = default.latency.median_ms
    totals = att.totals
    other_ms = (totals.entry_us + totals.exit_us + totals.eager_us) / 1e3
    breaks_ms = sum(e.parts.total_ms for e in entries)
    saving_ms = min(sum(e.cost_ms for e in entries), step_ms)
    projected = max(step_ms - saving_ms, 0.0)
    eager = modes.get("eager")
    eager_ms = eager.latency.median_ms if eager and eager.latency else None
    measured, ci = _measured_all_fixed(default, modes.get("fullgraph"))
    excess = _guard_excess_ms(att)
    return Ledger(
        step_ms=step_ms,
        compiled_ms=max(0.0, step_ms - breaks_ms - other_ms),
        breaks_ms=breaks_ms,
        other_ms=other_ms,
        saving_ms=saving_ms,
        projected_ms=projected,
        eager_ms=eager_ms,
        projected_speedup_vs_eager=eager_ms / projected if eager_ms and projected > 0 else None,
        measured_all_fixed_ms=measured,
        measured_all_fixed_ci_ms=ci,
        projection_miss=projected / measured - 1.0 if measured else None,
        guard_lookup_ms=totals.lookup_us / 1e3,
        guard_excess_ms=excess,
    )


def _measured_all_fixed(
    default: ModeResult, fullgraph: ModeResult | None
) -> tuple[float | None, tuple[float, float] | None]:
    """fullgraph's median when it compiled and matched eager, with the interval of the saving
    (default - fullgraph) from both modes' samples."""
    if fullgraph is None or fullgraph.status != "ok" or fullgraph.latency is None:
        return None, None
    if fullgraph.matches_eager is False or not fullgraph.latency.samples_ms:
        return None, None
    assert default.latency is not None
    _, low, high = stats.median_difference_ci(
        default.latency.samples_ms, fullgraph.latency.samples_ms
    )
    return fullgraph.latency.median_ms, (low, high)


def _guard_excess_ms(att: AttributionResult) -> float:
    """Guard evaluation beyond what the probe's trivial guards cost, per call."""
    if att.probe.lookup_us is None:
        return 0.0
    excess = att.totals.lookup_us - att.totals.lookups * att.probe.lookup_us
    return max(0.0, excess) / 1e3


# --- actions ----------------------------------------------------------------------------------


def build_actions(
    entries: tuple[BreakEntry, ...],
    what_ifs: tuple[WhatIf, ...],
    ledger: Ledger | None,
    recompiles: tuple[RecompileAdvice, ...],
    step: Step,
) -> tuple[Action, ...]:
    actions = _knob_actions(entries, what_ifs)
    covered = {b for a in actions for b in a.breaks}
    if ledger is not None:
        actions += _fullgraph_action(entries, ledger)
        actions += _guard_action(ledger, step, what_ifs)
    actions += [_code_action(e) for e in entries if e.verdict != "ignore" and e.id not in covered]
    actions += _recompile_actions(recompiles)
    return tuple(sorted(actions, key=lambda a: -(a.saving_ms if a.saving_ms is not None else -1)))


def _knob_actions(entries: tuple[BreakEntry, ...], what_ifs: tuple[WhatIf, ...]) -> list[Action]:
    out = []
    for w in what_ifs:
        if not w.clean or w.saving_ci_ms is None or w.saving_ci_ms[0] <= 0:
            continue
        removed = tuple(e.id for e in entries if e.id in w.removed)
        out.append(
            Action(
                kind="knob",
                saving_ms=w.saving_ms,
                saving_ci_ms=w.saving_ci_ms,
                measured=True,
                breaks=removed,
                matches_eager=w.matches_eager,
                knob=w.knob,
            )
        )
    return out


def _fullgraph_action(entries: tuple[BreakEntry, ...], ledger: Ledger) -> list[Action]:
    ci = ledger.measured_all_fixed_ci_ms
    if ledger.measured_all_fixed_ms is None or ci is None or ci[0] <= 0:
        return []
    return [
        Action(
            kind="fullgraph",
            saving_ms=ledger.step_ms - ledger.measured_all_fixed_ms,
            saving_ci_ms=ci,
            measured=True,
            breaks=tuple(e.id for e in entries),
            matches_eager=True,
        )
    ]


def _guard_action(ledger: Ledger, step: Step, what_ifs: tuple[WhatIf, ...]) -> list[Action]:
    """Measured truth first: the default mode timed without guard evaluation decides (no
    action when its saving is not beyond zero); without it, the estimate from the profile."""
    measured = next((w for w in what_ifs if w.fix == "guards" and w.status == "measured"), None)
    if measured is not None and measured.matches_eager is False:
        return []  # skipping the guards changed the result: nothing to recommend
    if measured is not None and measured.saving_ci_ms is not None:
        low, _ = measured.saving_ci_ms
        if low <= 0 or measured.saving_ms is None or measured.saving_ms <= step.threshold_ms:
            return []
        return [
            Action(
                kind="guards",
                saving_ms=measured.saving_ms,
                saving_ci_ms=measured.saving_ci_ms,
                measured=True,
                matches_eager=measured.matches_eager,
            )
        ]
    if ledger.guard_excess_ms <= max(step.threshold_ms, step.noise_ms):
        return []
    return [Action(kind="guards", saving_ms=ledger.guard_excess_ms)]


def _code_action(entry: BreakEntry) -> Action:
    assert entry.decision is not None
    fix = entry.decision.fix
    where = (
        entry.site.reached_from
        if entry.decision.library and entry.site.reached_from
        else entry.site.where
    )
    return Action(
        kind="isolate" if fix == "isolate" else "code",
        saving_ms=entry.cost_ms,
        saving_ci_ms=(
            max(0.0, entry.cost_ms - entry.cost_uncertainty_ms),
            entry.cost_ms + entry.cost_uncertainty_ms,
        ),
        measured=entry.decision.basis == "measured",
        breaks=(entry.id,),
        fix=fix,
        where=where,
    )


def _recompile_actions(recompiles: tuple[RecompileAdvice, ...]) -> list[Action]:
    if not recompiles:
        return []
    size = [r for r in recompiles if r.cause == "size"]
    rest = [r for r in recompiles if r.cause != "size"]
    out = []
    if size:
        dims = tuple(sorted({r.dim for r in size if r.dim is not None}))
        out.append(Action(kind="dynamic", saving_ms=None, dims=dims, compile_s=_compile_s(size)))
    if rest:
        out.append(Action(kind="recompile", saving_ms=None, compile_s=_compile_s(rest)))
    return out


def _compile_s(records: list[RecompileAdvice]) -> float:
    return sum(r.compile_s or 0.0 for r in records)


# --- recompiles -------------------------------------------------------------------------------


def recompile_advice(recompiles: tuple[RecompileRecord, ...]) -> tuple[RecompileAdvice, ...]:
    """The recompiles the workload caused (not a mode's own backend taking over a cached
    entry), each with its cause as the capture classified it."""
    return tuple(
        RecompileAdvice(r.compile_id, r.function, r.reason, r.cause, r.dim, r.compile_s)
        for r in recompiles
        if not r.backend_switch
    )

"""Decisions: what each root cause's recommended fix saves, and its verdict.

Measured truth first:
- a config knob that removes an entry's break cleanly (no new break, outputs accepted) with a
  saving beyond its noise decides that entry: its saving is the measured one (shared in
  proportion to the estimates when one knob removes several entries), in library code too;
- a side effect made a no-op (a print, a log call) measures what deleting it saves; moving it
  out of the compiled function saves that less the call's own time, from the profile;
- a what-if that removes the break with no measurable saving (its 95% interval reaches zero,
  or the saving is under the minimum effect, `Settings.min_effect` of the step) decides "no
  measurable effect": the entry is not acted on, and the interval's upper end bounds it;
- where the estimate and the measurement disagree beyond noise, the miss is kept.
An entry is `ignore` when its saving is below `ignore_share` of the step or below the noise,
else its category's action decides rewrite or isolate. A break in library code keeps its
category's verdict: the change is the library's to make (`Decision.library`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from advisor.core.kinds import Verdict, WhatIfKind
from advisor.core.model import BreakEntry, BreakSite, Decision, ModeResult, WhatIf
from advisor.core.replication import measurable
from advisor.core.taxonomy import category_for, in_library
from advisor.judge import cost
from advisor.judge.numerics import what_if_accepted

# The what-ifs that decide one entry's fix (placements and guards concern the whole step).
ENTRY_WHAT_IFS = ("knob", "noop", "undisable", "patch")


@dataclass(frozen=True)
class Step:
    """The default-mode step the entries are judged against."""

    median_ms: float
    noise_ms: float  # half-width of the median's 95% interval
    threshold_ms: float  # ignore_share of the median
    default: ModeResult | None = None  # for judging what-if outputs against its own
    min_effect_ms: float = 0.0  # the smallest saving a measurement can claim (min_effect of it)


def decide(entry: BreakEntry, step: Step, what_ifs: tuple[WhatIf, ...]) -> BreakEntry:
    category = category_for(entry.site)
    if category.key == "ddp":
        return _ddp_own(entry, step)
    fix = category.fix
    estimate = cost.saving_for(entry.savings, fix) or 0.0
    decision = Decision(
        verdict=Verdict.IGNORE,
        category=category.key,
        fix=fix,
        basis="estimate",
        saving_ms=estimate,
        threshold_ms=step.threshold_ms,
        noise_ms=max(step.noise_ms, entry.cost_uncertainty_ms),
        reason="above",
        library=_needs_library_change(entry.site, category.key),
    )
    measured = _what_if_for(entry, what_ifs, step)
    if measured is not None:
        decision = _with_what_if(decision, entry, measured, step)
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
        what_if_knob=measured.knob if measured is not None else None,
    )


def _needs_library_change(site: BreakSite, category: str) -> bool:
    """A break in library code needs a library change, except a training call (backward, the
    optimizer step) reached from a line of the user's: where and how they call it is theirs
    to change. Without such a line (a frame torch enters on its own, e.g. a fused optimizer
    it will not trace) nothing at a user line removes it."""
    if not in_library(site):
        return False
    return category != "training" or site.reached_from is None


def _ddp_own(entry: BreakEntry, step: Step) -> BreakEntry:
    """A break in DistributedDataParallel's own forward: DDP runs that code eagerly around the
    module it wraps, which compiles as a frame of its own. Intended: nothing of the user's to
    change and nothing of torch's to rewrite, so no fix saves anything."""
    decision = Decision(
        verdict=Verdict.IGNORE,
        category="ddp",
        fix="isolate",
        basis="estimate",
        saving_ms=0.0,
        threshold_ms=step.threshold_ms,
        noise_ms=max(step.noise_ms, entry.cost_uncertainty_ms),
        reason="ddp",
    )
    return replace(entry, decision=decision, cost_ms=0.0, cost_share=0.0)


def _what_if_for(entry: BreakEntry, what_ifs: tuple[WhatIf, ...], step: Step) -> WhatIf | None:
    """The what-if that decides this entry: of those that removed it cleanly, the one whose
    saving's interval starts highest (a patch set that removes it with another break can pay
    where its own patch alone measured nothing), ties in plan order (the knob, then a no-op,
    then a patch); else the first aimed at it."""
    ids = {entry.id, *(c.id for c in entry.causes)}
    mine = [w for w in what_ifs if w.kind in ENTRY_WHAT_IFS and ids & set(w.targets)]
    clean = [w for w in mine if _removes_cleanly(w, entry, step)]
    if clean:
        return max(clean, key=_paying_lower_bound)
    return (mine or [None])[0]


def _paying_lower_bound(w: WhatIf) -> float:
    """Its saving interval's lower bound where that is above zero, else -inf (not paying)."""
    low = w.saving_ci_ms[0] if w.saving_ci_ms is not None else -math.inf
    return low if low > 0 else -math.inf


def _removes_cleanly(w: WhatIf, entry: BreakEntry, step: Step) -> bool:
    return (
        w.status == "measured"
        and entry.id in w.removed
        and not w.new_breaks
        and what_if_accepted(w, step.default) is not False
    )


def _with_what_if(decision: Decision, entry: BreakEntry, w: WhatIf, step: Step) -> Decision:
    if w.status != "measured" or w.saving_ms is None or w.saving_ci_ms is None:
        return replace(decision, knob=w.knob, knob_outcome="failed")
    removed = entry.id in w.removed
    outcome = "kept" if not removed else ("moved" if w.new_breaks else "removed")
    decision = replace(decision, knob=w.knob, knob_outcome=outcome)
    if not removed or what_if_accepted(w, step.default) is False:
        return decision
    if w.new_breaks:
        # Moved: the variant breaks again nearby, so it prices the knob, not a fix that
        # removes the break; it neither confirms nor bounds that fix's estimate.
        return replace(decision, measured_ms=w.saving_ms, measured_ci_ms=w.saving_ci_ms)
    if w.deletes_call:
        return _with_noop(decision, entry, w, step.min_effect_ms)
    measured = _with_knob(decision, entry, w, step.min_effect_ms)
    if w.kind in (WhatIfKind.UNDISABLE, WhatIfKind.PATCH) and measured.basis == "measured":
        return replace(measured, fix="rewrite")  # the change is the code's (a patch, a decorator)
    return measured


def _with_knob(decision: Decision, entry: BreakEntry, w: WhatIf, min_effect_ms: float) -> Decision:
    assert w.saving_ms is not None and w.saving_ci_ms is not None
    low, high = w.saving_ci_ms
    estimate = cost.saving_for(entry.savings, w.fix) or 0.0
    miss = _miss(estimate, w.saving_ms, (high - low) / 2)
    if measurable(w.saving_ms, w.saving_ci_ms, min_effect_ms):
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
    return _bounded(decision, w, miss)


def _with_noop(decision: Decision, entry: BreakEntry, w: WhatIf, min_effect_ms: float) -> Decision:
    """The call made a no-op measures deleting it; moving it out keeps the call's own time
    (the Python work at the line, from the profile)."""
    assert w.saving_ms is not None and w.saving_ci_ms is not None
    low, high = w.saving_ci_ms
    kept_ms = entry.parts.python_work_ms if decision.fix == "isolate" else 0.0
    saving = max(0.0, w.saving_ms - kept_ms)
    estimate = cost.saving_for(entry.savings, decision.fix) or 0.0
    miss = _miss(estimate, saving, (high - low) / 2)
    if measurable(saving, (low - kept_ms, high - kept_ms), min_effect_ms):
        return replace(
            decision,
            basis="measured",
            saving_ms=saving,
            measured_ms=w.saving_ms,
            measured_ci_ms=w.saving_ci_ms,
            noise_ms=max(decision.noise_ms, (high - low) / 2),
            estimate_miss=miss,
        )
    return _bounded(decision, w, miss)


def _bounded(decision: Decision, w: WhatIf, miss: float | None) -> Decision:
    """Removed, and no measurable saving: the interval's upper end bounds the saving, and the
    entry is "no measurable effect" (never acted on ahead of a measured action)."""
    assert w.saving_ci_ms is not None
    bound = max(0.0, w.saving_ci_ms[1])
    return replace(
        decision,
        basis="bounded",
        reason="no_effect",
        saving_ms=min(decision.saving_ms, bound),
        measured_ms=w.saving_ms,
        measured_ci_ms=w.saving_ci_ms,
        estimate_miss=miss,
    )


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
    if decision.basis != "measured" and not decision.library and entry.terms.skipped_frame:
        return "rewrite"
    return action


def _reason(decision: Decision, entry: BreakEntry) -> str:
    if decision.reason == "no_effect":
        return "no_effect"
    if entry.occurrences_per_call == 0 and entry.terms.gap_us == 0 and decision.basis == "estimate":
        return "never_ran"
    if decision.saving_ms < decision.threshold_ms:
        return "below_share"
    if decision.saving_ms < decision.noise_ms:
        return "below_noise"
    return "above"


def share_measured_savings(
    entries: list[BreakEntry], what_ifs: tuple[WhatIf, ...], step: Step
) -> list[BreakEntry]:
    """One what-if that removed several entries measured their saving together: share it out
    in proportion to their estimates, and say with whom."""
    out = list(entries)
    for w in what_ifs:
        group = [i for i, e in enumerate(out) if _measured_by(e, w)]
        if len(group) < 2 or w.saving_ms is None:
            continue
        fixes = [out[i].decision.fix if out[i].decision else w.fix for i in group]
        estimates = [
            cost.saving_for(out[i].savings, w.fix if f == "knob" else f) or 0.0
            for i, f in zip(group, fixes, strict=True)
        ]
        total = sum(estimates)
        for i, estimate in zip(group, estimates, strict=True):
            share = estimate / total if total > 0 else 1.0 / len(group)
            out[i] = _with_share(out[i], w, share, estimate, group, out, step)
    return out


def _measured_by(entry: BreakEntry, w: WhatIf) -> bool:
    return (
        entry.decision is not None
        and entry.decision.knob == w.knob
        and entry.decision.basis == "measured"
    )


def _with_share(
    entry: BreakEntry,
    w: WhatIf,
    share: float,
    estimate: float,
    group: list[int],
    entries: list[BreakEntry],
    step: Step,
) -> BreakEntry:
    assert entry.decision is not None and w.saving_ms is not None
    measured = w.saving_ms * share
    moved_out = w.deletes_call and entry.decision.fix == "isolate"
    saving = max(measured - (entry.parts.python_work_ms if moved_out else 0.0), 0.0)
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

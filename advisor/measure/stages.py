"""The measuring stages after the modes, shared by the in-process run (`pipeline`) and the
isolated one (`isolate`), so both take the same measurements in the same order:

1. the modes (`harness.measure`), with the capture of the default mode's compile;
2. while the default mode is warm: its profile (with the break probe) and guard evaluation;
3. the what-ifs the capture calls for (`what_if_plan`), each compiled again and timed against
   the unmodified code (and, where the profile saw its calls page-fault, the C allocator
   keeping freed memory).

Which what-ifs to try follows from what was captured and measured (the kinds of break, the
profile's page faults), never from a judgement.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from advisor.core import policy
from advisor.core.artifacts import ProfileTrace
from advisor.core.errors import first_line
from advisor.core.model import (
    TRAINING_PLACEMENTS,
    BreakSite,
    Note,
    Patch,
    Settings,
    TrainingStep,
    WhatIf,
)
from advisor.core.taxonomy import (
    DDP_KNOB,
    Knob,
    category_for,
    combined,
    data_dependent_knobs,
    in_library,
    is_ddp_break,
    is_training_call,
    knob_combinations,
    knob_for,
    noop_for,
    pairs_and_all,
    setup_frames,
    skipped_in_loop,
)
from advisor.measure import harness
from advisor.measure.allocator import allocator_variant
from advisor.measure.lockstep import unprofiled_calls
from advisor.measure.profile import profile_calls
from advisor.measure.quiet import filtered_native_stderr
from advisor.measure.rewrite import (
    REWRITERS,
    Refusal,
    alternative_patches,
    combined_patch,
    patch_for,
)
from advisor.measure.rewrite.hoist import KIND as HOIST_KIND
from advisor.measure.rewrite.hoist import hoist_patch_for
from advisor.measure.rewrite.option import option_patch
from advisor.measure.training_variants import planned_kinds, training_variant
from advisor.measure.variants import (
    disable_variant,
    noop_variant,
    patch_record,
    patch_variant,
    regional_variant,
    split_variant,
    undisable_variant,
    variant_record,
)
from advisor.measure.whatif import Variant, knob_variant, measure_guard_skip, measure_variant
from advisor.measure.workload import Workload

# Profiler sessions per run, each paired with its own unprofiled timing (see profile_calls).
PROFILE_SESSIONS = 4


@dataclass(frozen=True)
class WarmStage:
    """What stage 2 measured on the warm default mode."""

    trace: ProfileTrace
    guards: WhatIf | None  # None: not asked for, or this torch cannot skip guards


def warm_default_stage(
    call: Callable[[], Any],
    reference: Any,
    settings: Settings,
    device: str,
    notes: list[Note],
) -> WarmStage:
    """Profile the warm default mode, then time it with and without guard evaluation (both
    before anything resets Dynamo)."""
    trace = profile_default(call, settings, device, notes)
    guards = measure_guard_skip(call, reference, settings, device) if settings.what_if else None
    return WarmStage(trace, guards)


def profile_default(
    call: Callable[[], Any], settings: Settings, device: str, notes: list[Note]
) -> ProfileTrace:
    probe = None
    try:
        probe = harness.break_probe(device)
    except Exception as exc:  # the estimate then omits the probe's prices, and says so
        notes.append(Note("probe_failed", detail=f"{type(exc).__name__}: {first_line(exc)}"))
    with filtered_native_stderr():
        return profile_calls(
            call,
            settings.profile_calls,
            device,
            probe=probe,
            sessions=PROFILE_SESSIONS,
            unprofiled=unprofiled_calls(settings, settings.profile_calls),
        )


@dataclass(frozen=True)
class WhatIfPlan:
    """One what-if to measure: its kind ("knob", "noop", "disable", "regional", "patch", ...),
    the captured sites it may remove, and its knob, no-op or patch."""

    kind: str
    targets: tuple[BreakSite, ...]
    knob: Knob | None = None
    noop: str | None = None
    patch: Patch | None = None

    @property
    def label(self) -> str:
        if self.knob is not None:
            return self.knob.name
        if self.patch is not None:
            return f"patch {self.patch.kind} line {self.patch.line}"
        return f"{self.kind} {self.noop}" if self.noop else self.kind

    def skipped(self) -> WhatIf:
        """The record of this what-if when it does not apply to the workload (no error: why it
        does not is the renderer's sentence for its kind)."""
        return self.failed(None, status="skipped")

    def failed(self, error: str | None, status: str = "failed") -> WhatIf:
        """The record of this what-if when it could not be measured (or did not apply)."""
        ids = tuple(t.id for t in self.targets)
        if self.knob is not None:
            knob = self.knob
            return WhatIf(knob.name, knob.setting, knob.fix, status, ids, error=error)
        if self.patch is not None:
            return replace(patch_record(self.patch, self.targets, status), error=error)
        record = variant_record(self.kind, self.targets, self.noop, status)
        return replace(record, error=error)


def what_if_plan(
    sites: tuple[BreakSite, ...],
    ddp: bool = False,
    training: TrainingStep | None = None,
    allocator: bool = False,
) -> list[WhatIfPlan]:
    """What to try, from the kinds of break captured alone (nothing has been judged yet): each
    config knob that could remove a break, each side effect to make a no-op, and, where there
    are breaks, the two placements (disable the functions holding them; compile only the
    break-free sub-modules). DistributedDataParallel's own breaks are not the user's to fix:
    nothing is tried for them; with `ddp` (the workload holds a DDP module), DDP's optimizer
    turned off (one graph per frame instead of one per gradient bucket) is tried instead. A
    training step (`training`, not under DDP) gets the placements of its form
    (`training_variants`), breaks or not: in training the optimizer and the backward hold time
    no forward break shows. With `allocator` (the default mode's calls page-fault enough,
    `allocator_planned`; only where each what-if runs in a process of its own), the C allocator
    keeping freed memory is tried too."""
    ddp_plans = [WhatIfPlan("knob", (), knob=DDP_KNOB)] if ddp else []
    own = tuple(s for s in sites if not is_ddp_break(s))
    # under DistributedDataParallel every rank must compile the same way at once: the
    # placements of a single-process step are not tried there
    kinds = () if ddp else planned_kinds(training)
    placements = [WhatIfPlan(kind, ()) for kind in kinds]
    kept = [WhatIfPlan("allocator", ())] if allocator else []
    return _plans(own) + placements + kept + ddp_plans


def allocator_planned(trace: ProfileTrace | None) -> bool:
    """Whether the profiled default mode's calls page-fault enough for the allocator what-if
    (`policy.allocator_worth_trying`, from their faults and their median unprofiled time)."""
    if trace is None or not trace.unprofiled_us:
        return False
    call_s = statistics.median(trace.unprofiled_us) / 1e6
    return policy.allocator_worth_trying(trace.minor_faults_per_call, call_s)


def _plans(sites: tuple[BreakSite, ...]) -> list[WhatIfPlan]:
    by_knob = knob_groups(sites)
    by_noop: dict[str, list[BreakSite]] = {}
    for site in sites:
        noop = noop_for(site)
        if noop is not None:
            by_noop.setdefault(noop, []).append(site)
    patches = _patch_plans(sites)
    # a side effect the user's code makes is measured by its patch (the call deleted there):
    # a no-op of the same call would time the same change again
    deleted = {
        t.id for p in patches if p.patch and p.patch.kind == "side_effect" for t in p.targets
    }
    plans = [WhatIfPlan("knob", tuple(t), knob=k) for k, t in by_knob.items()]
    plans += _combination_plans(by_knob)
    plans += [
        WhatIfPlan("noop", tuple(t), noop=n)
        for n, t in by_noop.items()
        if not {s.id for s in t} <= deleted
    ]
    plans += patches
    disabled = tuple(s for s in sites if category_for(s).key == "disabled")
    if disabled:
        plans.append(WhatIfPlan("undisable", disabled))
    if sites:
        plans += [WhatIfPlan("disable", sites), WhatIfPlan("regional", sites)]
    if any(is_training_call(s) for s in sites):
        plans.append(WhatIfPlan("split", sites))
    return plans


def knob_groups(sites: tuple[BreakSite, ...]) -> dict[Knob, list[BreakSite]]:
    """The breaks by the knob that could remove each (breaks no knob touches left out)."""
    by_knob: dict[Knob, list[BreakSite]] = {}
    for site in sites:
        knob = knob_for(site)
        if knob is not None:
            by_knob.setdefault(knob, []).append(site)
    return by_knob


def patch_outcome(site: BreakSite) -> Patch | Refusal | None:
    """The patch of the user's code for a break, or why there is none: its own line where it
    is the user's code; for library code, the setup the user's line repeats built once (None:
    the break's stack passes through no setup call)."""
    if in_library(site):  # the user's code builds the library's object on every call
        return hoist_patch_for(site)
    return patch_for(site.where.file, site.where.line, category_for(site).key)


def _combination_plans(by_knob: dict[Knob, list[BreakSite]]) -> list[WhatIfPlan]:
    """Knobs set together, aimed at the breaks of each: two knobs can each measure no effect
    alone where the breaks they leave keep the graph split, and together remove both (an
    adaptive solver loop breaking on a scalar and on a dynamic shape)."""
    combos, _ = knob_combinations(knobs_to_combine(by_knob))
    out = []
    for knobs in combos:
        targets = {s.id: s for k in knobs for s in by_knob.get(k, ())}
        out.append(WhatIfPlan("knob", tuple(targets.values()), knob=combined(knobs)))
    return out


def knobs_to_combine(by_knob: dict[Knob, list[BreakSite]]) -> list[Knob]:
    """The captured breaks' knobs, and where a data-dependent one sits in a loop whose frame
    Dynamo gave up on (the rest of the loop ran eagerly, so breaks after it were never
    captured), the other data-dependent knobs too: the break that knob alone would meet next
    is most often the other kind (a scalar used as a size, a mask's indices)."""
    knobs = list(by_knob)
    family = data_dependent_knobs()
    hidden = any(k in family and any(skipped_in_loop(s) for s in by_knob[k]) for k in knobs)
    if hidden:
        knobs += [k for k in family if k not in by_knob]
    return knobs


def _patch_plans(sites: tuple[BreakSite, ...]) -> list[WhatIfPlan]:
    """A patch for each break in the user's own code that a rewrite knows, and for each break
    in library code that the user's code reaches through setup work repeated on every call
    (one plan per distinct patch: two sites the same rewrite removes share it)."""
    by_patch: dict[tuple[str, str], tuple[Patch, list[BreakSite]]] = {}
    setup: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for site in sites:
        patch = patch_outcome(site)
        found = [patch, *alternative_patches(patch)] if isinstance(patch, Patch) else []
        for each in found:  # the fix, then other forms of it the measurement weighs
            by_patch.setdefault((each.file, each.hunks), (each, []))[1].append(site)
        if isinstance(patch, Patch) and patch.kind == HOIST_KIND:
            functions = {(f.file, f.function) for f in setup_frames(site)}
            setup.setdefault((patch.file, patch.hunks), set()).update(functions)
    for key, functions in setup.items():  # other breaks inside the setup it builds once
        targets = by_patch[key][1]
        targets += [
            s
            for s in sites
            if s not in targets and in_library(s) and (s.where.file, s.where.function) in functions
        ]
    plans = [WhatIfPlan("patch", tuple(t), patch=p) for p, t in by_patch.values()]
    return plans + _patch_combination_plans(plans) + _option_plans(sites)


def _option_plans(sites: tuple[BreakSite, ...]) -> list[WhatIfPlan]:
    """A library option passed (the value the library worked out on these inputs), for the
    breaks in the work it skips; one plan per option."""
    by_option: dict[tuple[str, str, str], tuple[Patch, list[BreakSite]]] = {}
    for site in sites:
        patch = option_patch(site.option) if site.option is not None else None
        if patch is not None:
            key = (patch.file, patch.names[2], patch.names[0])
            by_option.setdefault(key, (patch, []))[1].append(site)
    return [WhatIfPlan("patch", tuple(t), patch=p) for p, t in by_option.values()]


def patch_combinations(plans: list[WhatIfPlan]) -> tuple[list[list[WhatIfPlan]], str | None]:
    """The line patches of one file to apply together (pairs, and all of them: see
    `pairs_and_all`): one per break line, its first form (not the alternatives weighed beside
    it); the second value says why pairs were skipped."""
    by_file: dict[str, dict[int, WhatIfPlan]] = {}
    for plan in plans:
        patch = plan.patch
        if patch is not None and patch.kind in REWRITERS:
            by_file.setdefault(patch.file, {}).setdefault(patch.line, plan)
    groups: list[list[WhatIfPlan]] = []
    why = None
    for lines in by_file.values():
        combos, skipped = pairs_and_all(sorted(lines.values(), key=_patch_line), "patches")
        groups += [list(c) for c in combos]
        why = why or skipped
    return groups, why


def _patch_line(plan: WhatIfPlan) -> int:
    return plan.patch.line if plan.patch is not None else 0


def _patch_combination_plans(plans: list[WhatIfPlan]) -> list[WhatIfPlan]:
    """Patches applied together where a file has several: each alone can leave the graph split
    at the other's break and measure nothing (a refusal to combine drops that set)."""
    out = []
    for group in patch_combinations(plans)[0]:
        patch = combined_patch([p.patch for p in group if p.patch is not None])
        if isinstance(patch, Patch):
            targets = {t.id: t for p in group for t in p.targets}
            out.append(WhatIfPlan("patch", tuple(targets.values()), patch=patch))
    return out


def measure_what_if(
    workload: Workload,
    plan: WhatIfPlan,
    reference: Any,
    settings: Settings,
    device: str,
    sites: tuple[BreakSite, ...],
) -> WhatIf:
    """Stage 3 for one item of the plan (Dynamo is reset: run it after stage 2)."""
    targets = list(plan.targets)
    variant = variant_for(workload, plan, sites)
    if variant is None:
        return plan.skipped()
    return measure_variant(
        workload, variant, targets, reference, settings, device, baseline_sites=sites
    )


def variant_for(
    workload: Workload, plan: WhatIfPlan, sites: tuple[BreakSite, ...]
) -> Variant | None:
    targets = list(plan.targets)
    if plan.knob is not None:
        return knob_variant(plan.knob, targets)
    if plan.noop is not None:
        return noop_variant(plan.noop, targets)
    if plan.kind == "disable":
        return disable_variant(workload, sites, targets)
    if plan.kind == "split":
        return split_variant(workload, targets)
    if plan.kind == "undisable":
        return undisable_variant(targets)
    if plan.kind in TRAINING_PLACEMENTS:
        return training_variant(plan.kind, workload, targets)
    if plan.kind == "allocator":
        return allocator_variant(targets)
    if plan.patch is not None:
        return patch_variant(plan.patch, targets)
    return regional_variant(workload, targets)

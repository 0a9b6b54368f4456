"""The fixes considered for each break when the what-ifs are planned (#59), as records the
report shows: every one measured (a planned what-if), and every one skipped with why (a
rewrite's refusal, no knob for that kind of break, too many knobs to pair), so a user sees
what the search tried, not only what it found."""

from __future__ import annotations

from advisor.core.model import BreakSite, Candidate, Patch
from advisor.core.taxonomy import (
    category_for,
    in_library,
    is_ddp_break,
    knob_combinations,
    knob_for,
    noop_for,
)
from advisor.measure.stages import (
    WhatIfPlan,
    knob_groups,
    knobs_to_combine,
    patch_combinations,
    patch_outcome,
)

NO_KNOB = "no Dynamo knob removes this kind of break"
NO_REWRITE = "no rewrite of the user's code applies"
LIBRARY = (
    "library code: a patch of the user's code reaches it only where the user's line repeats "
    "setup work (a constructor) on every call"
)
PLACEMENT_KINDS = ("disable", "regional", "split")


def plan_candidates(sites: tuple[BreakSite, ...], plans: list[WhatIfPlan]) -> tuple[Candidate, ...]:
    """Per break: its knob, the knobs set together that include it, its patch, its side
    effect made a no-op, its `disable` boundary removed; then the placements planned for all."""
    own = tuple(s for s in sites if not is_ddp_break(s))
    out: list[Candidate] = []
    for site in own:
        out += _site_candidates(site, plans)
    out += _combination_skips(own, plans)
    out += [
        Candidate(tuple(t.id for t in p.targets), "placement", p.kind, True)
        for p in plans
        if p.kind in PLACEMENT_KINDS
    ]
    return tuple(out)


def _site_candidates(site: BreakSite, plans: list[WhatIfPlan]) -> list[Candidate]:
    ids = (site.id,)
    mine = [p for p in plans if any(t.id == site.id for t in p.targets)]
    knob = knob_for(site)
    out = [
        Candidate(ids, "knob", knob.name, True)
        if knob is not None
        else Candidate(ids, "knob", category_for(site).key, False, NO_KNOB)
    ]
    out += [
        Candidate(ids, "knobs", p.knob.name, True)
        for p in mine
        if p.knob is not None and p.knob.parts
    ]
    out.append(_patch_candidate(site, mine))
    out += [
        Candidate(ids, "patches", patch_set_label(p.patch), True)
        for p in mine
        if p.patch is not None and p.patch.parts
    ]
    if noop_for(site) is not None:
        noop = next((p for p in mine if p.kind == "noop"), None)
        why = "" if noop else "the patch deletes the same call"
        out.append(Candidate(ids, "noop", noop_for(site) or "", noop is not None, why))
    if category_for(site).key == "disabled":
        out.append(Candidate(ids, "undisable", "torch.compiler.disable removed", True))
    return out


def _patch_candidate(site: BreakSite, mine: list[WhatIfPlan]) -> Candidate:
    ids = (site.id,)
    planned = next((p.patch for p in mine if p.patch is not None and not p.patch.parts), None)
    if planned is not None:
        return Candidate(ids, "patch", planned.kind, True)
    # planning keeps the patches it found, not the refusals: asked again for why
    found = patch_outcome(site)
    label = "setup_hoist" if in_library(site) else "rewrite"
    if found is None:
        return Candidate(ids, "patch", label, False, LIBRARY)
    why = NO_REWRITE if isinstance(found, Patch) else found.reason
    return Candidate(ids, "patch", label, False, why)


def patch_set_label(patch: Patch) -> str:
    """`tensor_branch line 328 + kept_tensor line 331`: the parts of a combined patch."""
    return " + ".join(f"{part.kind} line {part.line}" for part in patch.parts)


def _combination_skips(sites: tuple[BreakSite, ...], plans: list[WhatIfPlan]) -> list[Candidate]:
    """Pairs of knobs or of patches not planned (too many of them), said once for the breaks
    they aim at."""
    by_knob = knob_groups(sites)
    _, why = knob_combinations(knobs_to_combine(by_knob))
    out = []
    if why is not None:
        ids = tuple(s.id for group in by_knob.values() for s in group)
        out.append(Candidate(ids, "knobs", "every pair", False, why))
    _, why = patch_combinations([p for p in plans if p.patch is not None and not p.patch.parts])
    if why is not None:
        ids = tuple(t.id for p in plans if p.patch is not None for t in p.targets)
        out.append(Candidate(tuple(dict.fromkeys(ids)), "patches", "every pair", False, why))
    return out

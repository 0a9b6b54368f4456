"""Actions: what to do, in order, each with what it saves and the step after it.

Measured changes (a knob, fullgraph=True, compiling only the break-free sub-modules, disabling
the functions that hold the breaks, not compiling at all) are ranked by their measured step;
estimated code changes by the default step less their estimate. Every action names a line the
user can change: the break's own line for code in the user's files; for a break in library
code, a knob, a placement, or the library line to report upstream, never the user's calling
line. Safe actions come first: skipping guard evaluation can silently run the wrong code, so
it comes after every safe action. Measured savings lead, largest first, and an estimate never
outranks one; among actions a rerun could not tell apart the narrowest change leads, so not
compiling leads only where no compiled arm comes near it. Where there is nothing to fix, that
comes first.
"""

from __future__ import annotations

from dataclasses import replace

from advisor.core.kinds import ActionKind, ActionOutcome, Verdict
from advisor.core.model import (
    TRAINING_PLACEMENTS,
    Action,
    BreakEntry,
    Decision,
    Ledger,
    Location,
    ModeResult,
    RecompileAdvice,
)
from advisor.core.paths import is_installed
from advisor.core.policy import LARGE_GUARD_SHARE
from advisor.judge.decide import Step
from advisor.judge.measured import MeasuredStep, runs_to_settle

# On a break-free model, skipping guards leads only when it saves at least this share.
PLACEMENTS = ("regional", "disable", "split", *TRAINING_PLACEMENTS)


def build_actions(
    entries: tuple[BreakEntry, ...],
    steps: list[MeasuredStep],
    ledger: Ledger | None,
    recompiles: tuple[RecompileAdvice, ...],
    step: Step,
) -> tuple[Action, ...]:
    measured = _measured_actions(entries, steps, step)
    covered = {
        b for a in measured if a.kind in (ActionKind.KNOB, ActionKind.PATCH) for b in a.breaks
    }
    unsafe = _guard_action(steps, ledger, step)
    fixes = [
        _entry_action(e, step)
        for e in entries
        if e.verdict != Verdict.IGNORE and e.id not in covered
    ]
    actions = _order([*measured, *fixes], step)
    # Breaks that are all "ignore" leave nothing to act on, as no break does.
    to_fix = any(e.verdict != Verdict.IGNORE for e in entries)
    if not to_fix and not any(a.saving_ms for a in actions) and ledger is not None:
        actions = [_keep(ledger, steps, step), *actions]
    elif ledger is not None and _only_library_estimates(actions):
        actions = [replace(_keep(ledger, steps, step), unmeasured="library"), *actions]
    placed = _place_guards(actions, unsafe, to_fix, step)
    best = max((a.saving_ms or 0.0 for a in placed if a.measured), default=0.0)
    unsettled = _no_effect(entries, steps, step, best)
    listed = placed + _recompile_actions(recompiles) + unsettled
    return tuple(replace(a, outcome=outcome(a)) for a in listed)


def _only_library_estimates(actions: list[Action]) -> bool:
    """Every saving left is an estimate of a change to library code: nothing the user can do
    at their own line has a number, so keeping things as they are leads, the library change
    said after it (a report upstream saves nothing in this run; on the held-out set such an
    estimate led where the reference measured nothing better than the default)."""
    doable = [a for a in actions if a.saving_ms and a.saving_ms > 0]
    return bool(doable) and all(a.kind == ActionKind.UPSTREAM and not a.measured for a in doable)


def outcome(action: Action) -> ActionOutcome:
    """Whether the action is something to do: a saving per call, measured beyond the noise or
    estimated. A measured change that costs time, or whose saving cannot be told from zero,
    was tried; a recompile's fix changes compile time only. (A KEEP is `NOTHING` whatever is
    given: `Action` fixes that, for reports written before the field too.)"""
    if action.saving_ms is None:
        return ActionOutcome.COMPILE_TIME
    if action.measured and not action.measurable:
        ci = action.saving_ci_ms
        return ActionOutcome.SLOWER if ci is not None and ci[1] < 0 else ActionOutcome.NO_EFFECT
    if action.saving_ms <= 0:
        return ActionOutcome.SLOWER if action.measured else ActionOutcome.NO_EFFECT
    return ActionOutcome.DO


def _no_effect(
    entries: tuple[BreakEntry, ...], steps: list[MeasuredStep], step: Step, best_ms: float
) -> list[Action]:
    """The measured changes with no measurable effect, last: the user sees they were tried.
    One whose saving would lead if it held (above `best_ms`, the best measured action's) keeps
    how many runs judged together would tell it."""
    shown = _measured_actions(entries, steps, step, measurable=False)
    return [
        replace(
            a,
            measurable=False,
            runs_to_settle=a.runs_to_settle if (a.saving_ms or 0.0) > best_ms else None,
        )
        for a in shown
        if a.kind not in (ActionKind.EAGER, ActionKind.GUARDS)
    ]


def _measured_actions(
    entries: tuple[BreakEntry, ...],
    steps: list[MeasuredStep],
    step: Step,
    measurable: bool = True,
) -> list[Action]:
    ids = {e.id for e in entries}
    out = []
    for s in steps:
        if s.accepted is False or s.beyond_noise != measurable:
            continue
        if s.kind == "knob" and s.clean and s.removes & ids:
            out.append(_from_step(s, "knob", tuple(sorted(s.removes & ids)), knob=s.source))
        elif s.kind == "patch" and s.clean and s.removes & ids:
            out.append(_patch_action(s, tuple(sorted(s.removes & ids))))
        elif s.kind == "fullgraph" and entries:
            out.append(_from_step(s, "fullgraph", tuple(e.id for e in entries)))
        elif s.kind in PLACEMENTS and s.what_if is not None:
            covered = tuple(sorted(ids & set(s.what_if.targets)))
            out.append(replace(_from_step(s, s.kind, covered), subjects=s.what_if.subjects))
        elif s.kind == "eager":
            out.append(_from_step(s, "eager", ()))
        elif s.kind == "setting":  # it changes how the step runs, whether or not breaks go
            out.append(_from_step(s, "knob", tuple(sorted(s.removes & ids)), knob=s.source))
        elif s.kind == "allocator":  # how the process's memory is kept, no break aimed at
            setting = s.what_if.setting if s.what_if is not None else None
            out.append(_from_step(s, "allocator", (), knob=setting))
    return out


def _from_step(
    s: MeasuredStep, kind: str, breaks: tuple[str, ...], knob: str | None = None
) -> Action:
    return Action(
        kind=kind,
        saving_ms=s.saving_ms,
        saving_ci_ms=s.saving_ci_ms,
        run_ci_ms=s.run_ci_ms,
        first_call_s=s.first_call_s,
        break_even_calls=s.break_even_calls,
        measured=True,
        breaks=breaks,
        matches_eager=s.accepted,
        knob=knob,
        step_ms=s.step_ms,
        max_abs_diff=s.max_abs_diff,
        default_abs_diff=s.default_abs_diff,
        processes=s.processes,
        runs_to_settle=runs_to_settle(s),  # None for a saving beyond the noise
    )


def _patch_action(s: MeasuredStep, breaks: tuple[str, ...]) -> Action:
    """A patch of the user's code, generated and measured: at the break's line, with its
    diff."""
    assert s.what_if is not None and s.what_if.patch is not None
    patch = s.what_if.patch
    function = patch.edits[0].qualname if patch.edits else ""
    where = Location(patch.file, patch.line, function)
    return replace(_from_step(s, "patch", breaks), patch=patch, where=where, fix="rewrite")


def _entry_action(entry: BreakEntry, step: Step) -> Action:
    """The change at the break's own line: the user's code (rewrite, isolate, delete), or for
    library code the library line to report upstream (the knob or placement that removes it
    from the user's side, when one was measured, is an action of its own)."""
    assert entry.decision is not None
    fix = entry.decision.fix
    where = entry.site.where
    if entry.decision.library:
        kind = "upstream"
    else:
        kind = "isolate" if fix == "isolate" else "code"
    if entry.decision.category == "training" and is_installed(where.file):
        where = entry.site.reached_from or where  # the user's call into torch's own code
    return Action(
        kind=kind,
        saving_ms=entry.cost_ms,
        saving_ci_ms=_entry_interval(entry),
        measured=entry.decision.basis == "measured",
        breaks=(entry.id,),
        fix=fix,
        where=where,
        step_ms=step.median_ms - entry.cost_ms,
        unmeasured=None if entry.decision.basis == "measured" else unmeasured(entry.decision),
    )


def unmeasured(decision: Decision) -> str:
    """What stopped an estimated fix being measured: the what-if tried for its break, or why
    none was (library code is changed through a knob or a placement, each an action of its
    own; user code gets a patch where the rewrite engine knows the shape)."""
    if decision.knob is not None and decision.knob_outcome in ("failed", "kept", "moved"):
        return decision.knob_outcome
    if decision.knob is not None:  # it removed the break: its output was not accepted
        return "differs"
    return "library" if decision.library else "no_rewrite"


def _entry_interval(entry: BreakEntry) -> tuple[float, float]:
    """A measured entry's interval is its what-if's, moved with its saving (less the call's own
    time where the fix moves the call out; a share where one what-if removed several); an
    estimate's is its spread."""
    d = entry.decision
    assert d is not None
    ms = entry.cost_ms
    if d.basis == "measured" and d.measured_ci_ms is not None and d.measured_ms:
        low, high = d.measured_ci_ms
        if d.shared_with:
            k = ms / d.measured_ms
            return (low * k, high * k)
        shift = d.measured_ms - ms
        return (low - shift, high - shift)
    return (max(0.0, ms - entry.cost_uncertainty_ms), ms + entry.cost_uncertainty_ms)


def _order(actions: list[Action], step: Step) -> list[Action]:
    """Measured savings beyond the noise first, largest first; then estimates, by the step
    after each; estimates of library changes last. An estimate never outranks a measurement
    (a measurement of a change is evidence, an estimate a guess at one), and not compiling
    leads only where its saving is the largest: it is the broadest change, so any compiled arm
    a rerun could not tell from it leads in its place (`_first_of_ties`)."""
    ranked = sorted(
        actions,
        key=lambda a: (a.kind == ActionKind.UPSTREAM, not _timed(a), _step_of(a, step), a.kind),
    )
    return _first_of_ties(ranked)


# Among actions a rerun could not tell apart, the narrowest change leads: what it touches
# beyond the line it names, least first. fullgraph=True is one argument of the user's compile
# call (and turns any later break into an error there); a patch changes the user's own line;
# an optimizer option, one constructor argument; a placement changes what the call compiles;
# a knob or a setting holds for every compile in the process, the allocator's setting for every
# allocation in it; not compiling gives up the rest.
# A fixed preference, because two such actions are ordered by noise whatever reads their
# numbers (the held-out reruns campaign, docs/measurement.md).
NARROWEST_FIRST = (
    (ActionKind.FULLGRAPH,),
    (ActionKind.PATCH,),
    (ActionKind.FUSED, ActionKind.FOREACH),
    (
        ActionKind.REGIONAL,
        ActionKind.DISABLE,
        ActionKind.SPLIT,
        ActionKind.MODULE,
        ActionKind.OPTIMIZER,
        ActionKind.STEP,
        ActionKind.EAGER_FUSED,
    ),
    (ActionKind.KNOB, ActionKind.SETTING, ActionKind.ALLOCATOR),
    (ActionKind.EAGER,),
)


def scope_rank(kind: str) -> int:
    """Where an action's kind stands in `NARROWEST_FIRST` (kinds not in it, after)."""
    return next(
        (i for i, kinds in enumerate(NARROWEST_FIRST) if kind in kinds), len(NARROWEST_FIRST)
    )


def _first_of_ties(ranked: list[Action]) -> list[Action]:
    """The leader gives way within its ties: the measured actions a rerun could not tell from
    it (the leader's saving inside their interval, which is where a rerun would put their
    saving). Of those, the narrowest change leads (`NARROWEST_FIRST`); the same kind, the
    saving's order. Otherwise which of them leads turns on the run, and the one chosen loses
    nothing measurable. A first call (compile) never drops a larger saving: what it costs is
    the action's break-even (calls until its saving pays for it), stated beside it. The rest
    keep their order."""
    if not ranked or not _timed(ranked[0]):
        return ranked
    lead = ranked[0]
    assert lead.saving_ms is not None

    def tied(a: Action) -> bool:
        ci = a.saving_ci_ms
        return _timed(a) and ci is not None and ci[0] <= lead.saving_ms <= ci[1]  # type: ignore[operator]

    ties = [lead, *(a for a in ranked[1:] if tied(a))]
    chosen = min(ties, key=lambda a: (scope_rank(a.kind), _parts(a), ties.index(a)))
    return [chosen, *(a for a in ranked if a is not chosen)]


def _parts(action: Action) -> int:
    """How many patches the action applies at once: one is narrower than two that tie with it."""
    return len(action.patch.parts) if action.patch is not None and action.patch.parts else 1


def _timed(action: Action) -> bool:
    """Measured beyond noise, with a saving."""
    return action.measured and action.measurable and action.saving_ms is not None


def _step_of(action: Action, step: Step) -> float:
    """The step after the action, as its saving gives it: a measured saving is paired wave by
    wave with the default (and so with every other arm of the wave), the arm's own median is
    not, and the saving is the number the report shows. It does not settle two actions a
    rerun cannot tell apart (their order turns on the run): `_first_of_ties` does."""
    if action.saving_ms is not None:
        return step.median_ms - action.saving_ms
    if action.step_ms is not None:
        return action.step_ms
    return step.median_ms


def _keep(ledger: Ledger, steps: list[MeasuredStep], step: Step) -> Action:
    """Nothing to fix (no break, or none worth fixing); how it stands against eager, measured."""
    eager = next((s for s in steps if s.kind == "eager"), None)
    return Action(
        kind=ActionKind.KEEP,
        saving_ms=0.0,
        measured=eager is not None,
        step_ms=step.median_ms,
    )


def _guard_action(steps: list[MeasuredStep], ledger: Ledger | None, step: Step) -> Action | None:
    """Measured truth first: the default mode timed without guard evaluation decides (no
    action when its saving is not beyond zero); without it, the estimate from the profile."""
    measured = next((s for s in steps if s.kind == "guards"), None)
    if measured is not None:
        if measured.accepted is False or not measured.beyond_noise:
            return None
        if measured.saving_ms <= step.threshold_ms:
            return None
        return replace(_from_step(measured, "guards", ()), safe=False)
    if ledger is None or ledger.guard_excess_ms <= max(step.threshold_ms, step.noise_ms):
        return None
    return Action(
        kind=ActionKind.GUARDS,
        saving_ms=ledger.guard_excess_ms,
        step_ms=step.median_ms - ledger.guard_excess_ms,
        safe=False,
    )


def _place_guards(
    actions: list[Action], guards: Action | None, to_fix: bool, step: Step
) -> list[Action]:
    """After every safe action; first on a model with no break to fix only when it saves a
    large share of the step (and never ahead of a measured action that saves more)."""
    if guards is None:
        return actions
    share = (guards.saving_ms or 0.0) / step.median_ms if step.median_ms > 0 else 0.0
    leads = guards.measured and share >= LARGE_GUARD_SHARE  # an estimate is checked first
    if not to_fix and leads and actions and actions[0].kind == ActionKind.KEEP:
        return [guards, *actions]
    return [*actions, guards]


def _recompile_actions(recompiles: tuple[RecompileAdvice, ...]) -> list[Action]:
    if not recompiles:
        return []
    size = [r for r in recompiles if r.cause == "size"]
    rest = [r for r in recompiles if r.cause != "size"]
    out = []
    if size:
        dims = tuple(sorted({r.dim for r in size if r.dim is not None}))
        out.append(
            Action(kind=ActionKind.DYNAMIC, saving_ms=None, dims=dims, compile_s=_compile_s(size))
        )
    if rest:
        out.append(Action(kind=ActionKind.RECOMPILE, saving_ms=None, compile_s=_compile_s(rest)))
    return out


def _compile_s(records: list[RecompileAdvice]) -> float:
    return sum(r.compile_s or 0.0 for r in records)


def misplaced(
    actions: tuple[Action, ...], entries: tuple[BreakEntry, ...]
) -> list[tuple[Action, str]]:
    """The actions whose line is not where the user can make the change they describe, each
    with why: a code change at a library line or at a line other than its break's (a training
    call into torch's own code is changed at the user's call), a library change at the user's
    line, a placement with nothing to place."""
    by_id = {e.id: e for e in entries}
    found = []
    for action in actions:
        problem = _location_problem(action, [by_id[b] for b in action.breaks if b in by_id])
        if problem:
            found.append((action, problem))
    return found


def _location_problem(action: Action, entries: list[BreakEntry]) -> str:
    where = action.where
    if action.kind == ActionKind.PATCH and (where is None or is_installed(where.file)):
        return "a patch to a file that is not the user's code"
    if action.kind in (ActionKind.CODE, ActionKind.ISOLATE):
        if where is None:
            return "a code change without a line"
        if is_installed(where.file):
            return "a code change at a library line"
        allowed = {(e.site.where.file, e.site.where.line) for e in entries}
        allowed |= {
            (r.file, r.line)
            for e in entries
            if (r := e.site.reached_from) and e.decision and e.decision.category == "training"
        }
        if (where.file, where.line) not in allowed:
            return "a code change at a line that is not its break's"
    if action.kind == ActionKind.UPSTREAM and (where is None or not is_installed(where.file)):
        return "a library change at a line that is not library code"
    if action.kind in (ActionKind.REGIONAL, ActionKind.DISABLE) and not action.subjects:
        return "a placement with nothing to place"
    return ""


def compile_failed_actions(modes: dict[str, ModeResult]) -> tuple[Action, ...]:
    """Where default torch.compile fails and eager runs: not compiling, at the failing line
    when the error names one (a library line is for an upstream report)."""
    default, eager = modes.get("default"), modes.get("eager")
    if default is None or default.status != "failed" or eager is None or eager.latency is None:
        return ()
    error = default.error
    where = None
    if error is not None and error.file and error.line:
        where = Location(error.file, error.line, "", error.code or "")
    return (
        Action(
            kind=ActionKind.EAGER,
            saving_ms=None,
            measured=True,
            fix="compile_failed",
            where=where,
            step_ms=eager.latency.median_ms,
        ),
    )

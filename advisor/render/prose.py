"""Every sentence a report says, written from the records' numbers.

Records carry facts and numbers; this module turns them into words: why a verdict was given,
the cost model's evidence, what a what-if showed, the method of the attribution, the title of an
action and the one-line verdict on the whole workload. Category titles and recipes for a line
are in `advisor.render.recipes`, the number formatters in `advisor.render.formatting`; both are
importable from here too. Paths are shortened with `display`, so a report reads the same
wherever it is re-rendered.
"""

from __future__ import annotations

from advisor.core.kinds import ActionOutcome, Verdict, WhatIfKind
from advisor.core.model import (
    TRAINING_PLACEMENTS,
    Action,
    BreakEntry,
    Calibration,
    Decision,
    Ledger,
    RecompileAdvice,
    Report,
    WhatIf,
)
from advisor.judge.numerics import what_if_accepted
from advisor.render import actions, search_words
from advisor.render.formatting import Display as Display
from advisor.render.formatting import displayer, knob_code
from advisor.render.formatting import fmt_ms as _ms
from advisor.render.formatting import fmt_num as _num
from advisor.render.formatting import fmt_pct as _pct
from advisor.render.formatting import location as location
from advisor.render.ranks import DDP_NO_OVERLAP, DDP_WHY
from advisor.render.recipes import LIBRARY_RECIPE as LIBRARY_RECIPE
from advisor.render.recipes import LOOP_RECIPE as LOOP_RECIPE
from advisor.render.recipes import RECIPES as RECIPES
from advisor.render.recipes import SKIPPED_RECIPE as SKIPPED_RECIPE
from advisor.render.recipes import TITLES as TITLES
from advisor.render.recipes import category_title as category_title
from advisor.render.recipes import recipe as recipe
from advisor.render.recipes import recipe_first_sentence as recipe_first_sentence
from advisor.render.recipes import skipped_note as skipped_note

BEHAVIOUR = {
    "nested_prints_dropped": (
        "print calls reached from nested (inlined) functions are dropped under this knob, "
        "not reordered"
    ),
    "logging_noop": "the logging call becomes a no-op in compiled code",
    "ddp_no_overlap": DDP_NO_OVERLAP,
}

FIX_WORDS = {
    "isolate": "moving or isolating it",
    "rewrite": "rewriting it in tensor code",
    "delete": "deleting it",
    "knob": "the measured config knob",
}


VERDICT_REASONS = {
    "below_noise": "within noise",
    "no_effect": "no measurable effect",
    "below_share": "small",
    "never_ran": "never ran",
    "ddp": "DDP's own",
}


def verdict_label(d: Decision) -> str:
    """The verdict as tables show it: an `ignore` says why, because a cost inside the noise of
    the measurement (unknown: it may matter) is not a cost that is small (known not to)."""
    if d.verdict == Verdict.IGNORE and d.reason in VERDICT_REASONS:
        return f"ignore ({VERDICT_REASONS[d.reason]})"
    if d.verdict == Verdict.REWRITE and d.library:
        # The rewrite is of the library's line, not of the user's call: the same as its action.
        return "rewrite (library change)"
    return d.verdict


def _no_effect_why(d: Decision, amount: str) -> str:
    measured = _ms(d.measured_ms) if d.measured_ms is not None else "-"
    if d.measured_ci_ms is not None:
        measured += f" [{_ms(d.measured_ci_ms[0])}, {_ms(d.measured_ci_ms[1])}]"
    return (
        f"{amount}; its what-if measured {measured} ms/call: no measurable effect (the 95% "
        "interval of where a rerun would put it reaches zero, or the saving is under the "
        "minimum effect, --min-effect), so it is not acted on"
    )


def why(entry: BreakEntry, report: Report) -> str:
    """The numbers that decided the verdict, in one paragraph."""
    d = entry.decision
    if d is None:
        return ""
    step = report.ledger.step_ms if report.ledger else 0.0
    basis = {
        "measured": "measured saving",
        "bounded": "saving (bounded by a measurement)",
        "estimate": "estimated saving",
    }.get(d.basis, d.basis)
    fix = FIX_WORDS.get(d.fix, d.fix)
    head = f"{category_title(d.category)}; runs {entry.occurrences_per_call:g}x per call; "
    if d.reason == "never_ran":
        return head + "it did not run in the profiled calls, so it costs nothing here."
    if d.reason == "ddp":
        return DDP_WHY
    amount = f"{basis} of {fix}: {_ms(d.saving_ms)} ms/call"
    if d.reason == "below_share":
        verdict = (
            f"{amount} is below {_pct(d.threshold_ms / step if step else None)} of the "
            f"{_ms(step)} ms step ({_ms(d.threshold_ms)} ms)"
        )
    elif d.reason == "no_effect":
        verdict = _no_effect_why(d, amount)
    elif d.reason == "below_noise":
        verdict = (
            f"{amount} is within the measurement noise ({_ms(d.noise_ms)} ms): it cannot be "
            "told from zero here, so ignoring it is a call made inside the noise (a longer or "
            "quieter measurement may show it matters)"
        )
    else:
        verdict = (
            f"{amount} = {_pct(d.saving_ms / step if step else None)} of the {_ms(step)} ms "
            f"step, above the threshold and the noise ({_ms(d.noise_ms)} ms)"
        )
        if d.saving_ms - d.noise_ms < d.threshold_ms:
            verdict += (
                f"; within the noise it could be as low as {_ms(d.saving_ms - d.noise_ms)} ms, "
                "under the threshold, so this verdict is close"
            )
    text = head + verdict
    if d.library and d.basis != "measured":
        text += "; the break is in library code"
    if entry.site.frame_skipped:
        text += f"; {skipped_note(entry.site)}: the frame runs eagerly"
    if d.estimate_miss is not None:
        text += f"; the estimate missed the measurement by {d.estimate_miss:+.0%}"
    if d.shared_with:
        text += f"; the knob removed {', '.join(d.shared_with)} too and its saving is shared"
    return text + "."


def evidence(entry: BreakEntry) -> str:
    """The cost model's terms for this entry."""
    t = entry.terms
    text = (
        f"{t.regions:g} extra region(s) x guard lookup {t.guard_lookup_us:.1f} µs, "
        f"{t.graph_regions:g} calling a graph x {t.region_overhead_us + t.graph_call_us:.1f} µs "
        f"(region overhead {t.region_overhead_us:.1f} + graph call {t.graph_call_us:.1f}); "
        f"owned eager time {t.gap_us:.1f} µs, of which tensor work {t.tensor_work_us:.1f} µs"
    )
    if t.kept_us > 0:
        text += f" ({t.kept_us:.1f} µs compute-bound: the same kernels compiled)"
    if t.glue_us and not t.skipped_frame:
        text += f"; glue {t.glue_us:.1f} µs per occurrence"
    if t.overhead_cap < 1.0:
        text += f"; fixed prices scaled x{t.overhead_cap:.2f} to what the profile measured"
    return text + "; kernel fusion across the split is not estimated"


def savings_line(entry: BreakEntry) -> str:
    """The other fixes' savings beside the recommended one."""
    s = entry.savings
    options = [
        (word, value)
        for word, value in (
            ("moving/isolating it", s.isolate),
            ("rewriting it in tensor code", s.rewrite),
            ("deleting it", s.delete),
        )
        if value is not None
    ]
    return "; ".join(f"{word} saves {_ms(v)} ms" for word, v in options)


def _diffs(w: WhatIf) -> str:
    """The variant's and the baseline's largest differences from eager, where either is off."""
    out, base = w.output, w.baseline_output
    if out is None or out.max_abs_diff is None or (out.matches and (base is None or base.matches)):
        return ""
    shown = f" (max |Δ| {out.max_abs_diff:.2g}"
    if base is not None and base.max_abs_diff is not None:
        shown += f"; the default mode's {base.max_abs_diff:.2g}"
    return shown + ")"


# Why a what-if of this kind was not tried (its record says only that it was skipped).
NOT_APPLICABLE: dict[str, str] = {
    "regional": "no sub-module of the workload compiles without a break on its own",
    "disable": "no function holding a break could be found to disable",
    "split": "no optimizer, or no module, in the step",
    "undisable": "no torch.compiler.disable wrapper named on the break's line was found",
    "optimizer": "no optimizer in the step, or the model is not compiled in place",
    "step": "no optimizer in the step, or the model is not compiled in place",
    "module": "no optimizer or no module in the step, or the step is not compiled whole",
    "fused": (
        "no optimizer with a fused kernel for these parameters (or already fused), or the "
        "model is not compiled in place"
    ),
    "foreach": (
        "no optimizer that takes foreach=True without a fused kernel for these parameters "
        "(where it has one, fused is tried), or the model is not compiled in place"
    ),
    "eager_fused": "no optimizer with a fused kernel for these parameters (or already fused)",
    "allocator": "the C library is not glibc: its malloc has no setting to keep freed memory",
}


def what_if_line(w: WhatIf, training: bool = False) -> str:
    """The what-if's outcome in one line; on a training step (`training`) a variant that failed
    ran the full step (forward, backward, optimizer), so it breaks training."""
    if w.status == "skipped":
        why = w.error or NOT_APPLICABLE.get(w.kind, "does not apply")
        return f"{actions.what_if_label(w)}: not tried ({why})"
    if w.status != "measured":
        failed = "breaks training" if training else "failed"
        return f"{actions.what_if_label(w)}: {failed}: {w.error or 'no detail'}"
    if training and what_if_accepted(w, None) is False:
        return (
            f"{actions.what_if_label(w)}: breaks training: its first steps differ from eager's "
            f"beyond rounding{_diffs(w)}; {_ms(w.baseline_ms)} → {_ms(w.variant_ms)} ms/call, "
            "not counted as a saving"
        )
    ci = f"[{_ms(w.saving_ci_ms[0])}, {_ms(w.saving_ci_ms[1])}]" if w.saving_ci_ms else "-"
    match = {True: "yes", False: "NO", None: "-"}[w.matches_eager]
    match = f"first steps match eager: {match}" if training else f"matches eager: {match}"
    if w.kind == WhatIfKind.GUARDS or w.fix == "guards":
        return (
            f"`{w.setting}({w.knob})` (the same compiled code, guards not evaluated): "
            f"{_ms(w.baseline_ms)} → {_ms(w.variant_ms)} ms/call, saving {_ms(w.saving_ms)} ms, "
            f"95% CI {ci}; {match}; {_rests_on(w, 'interleaved')}"
        )
    removed = f"removes {len(w.removed)} of {len(w.targets)} targeted break(s)"
    whole_step = {
        "setting": "a setting",
        "allocator": "a setting",
        **dict.fromkeys(TRAINING_PLACEMENTS, "a placement"),
    }
    if w.kind in whole_step and not w.targets:
        removed = f"{whole_step[w.kind]} for the whole step, no break targeted"
        if w.new_breaks:
            removed += f"; {len(w.new_breaks)} break(s) in what it compiles"
    elif w.new_breaks:
        removed += f", {len(w.new_breaks)} new break(s) in their place"
    timing = "interleaved" if w.interleaved else "one after the other (the original skips frames)"
    return (
        f"{actions.what_if_label(w)}: {_ms(w.baseline_ms)} → {_ms(w.variant_ms)} ms/call, saving "
        f"{_ms(w.saving_ms)} ms, 95% CI {ci}; {removed}; {match}{_diffs(w)}; "
        f"{_rests_on(w, timing)}"
        + ("; the medians' 95% intervals did not reach the target" if w.target_met is False else "")
    )


def _rests_on(w: WhatIf, timing: str) -> str:
    """How many processes and rounds the what-if's numbers rest on."""
    rep = w.replication
    if rep is None:
        return f"{w.rounds} rounds, {timing}"
    paired = len(w.process_savings_ms)
    return (
        f"{rep.processes} processes x {rep.rounds} rounds, interleaved with the other arms; "
        f"saving paired with the default mode over {paired} wave(s)"
    )


def behaviour_warning(w: WhatIf) -> str | None:
    notes = []
    if w.stdout_chars and w.stdout_chars[0] != w.stdout_chars[1]:
        before, after = w.stdout_chars
        dropped = " (the print was dropped)" if before and not after else ""
        notes.append(
            f"stdout differs under the knob: {before} characters per call before, "
            f"{after} after{dropped}"
        )
    elif w.behaviour_change in ("logging_noop", "ddp_no_overlap"):
        notes.append(BEHAVIOUR[w.behaviour_change])
    if w.recompiled_while_timed:
        notes.append("the variant recompiled while being timed")
    if w.error:
        notes.append(w.error)
    return "; ".join(notes) or None


def method(c: Calibration) -> str:
    """How the profile's times were corrected, from the calibration's numbers."""
    calibration = (
        f"tiny aten op with vs without the profiler: ({_num(c.calibration_profiled_us)} - "
        f"{_num(c.calibration_bare_us)} µs) / {_num(c.events_per_op, 0)} event(s)"
        if c.calibration_profiled_us is not None
        else "no calibration"
    )
    if c.reference == "none":
        return f"profile only, work corrected for {c.overhead_us_per_event:.2f} µs per aten event"
    source = {
        "sessions": f"timed right before the profile, {c.sessions} profiler session(s)",
        "given": "the mode's median: no unprofiled calls in the trace",
    }.get(c.reference, c.reference)
    text = (
        f"work (graph calls, aten ops) from the profile, corrected for "
        f"{c.overhead_us_per_event:.2f} µs per aten event ({calibration}); runtime overhead "
        f"(wrappers, guard lookups, Python) totals the unprofiled call ({source}) minus that "
        f"work: the profiler's {c.structural_event_us:.2f} µs per region, lookup and graph-call "
        "event is taken out where those events are, the rest of the difference in proportion "
        f"to time ({c.overhead_scale:.0%} of the profiled overhead kept); the profiled call was "
        f"{_num(c.profiled_ratio)}x the unprofiled one"
    )
    if c.fallback_calls:
        text += f"; {c.fallback_calls} call(s) with work above the unprofiled time scaled alike"
    if abs(c.rescale - 1.0) > 1e-9:
        text += (
            f"; all segments then rescaled x{c.rescale:.2f} to the mode's median "
            f"({_num(c.step_us, 1)} µs against {_num(c.reference_us, 1)} µs at profile time: "
            "machine drift)"
        )
    if c.graph_call_us is not None:
        text += (
            f"; one more graph call costs {c.graph_call_us:.2f} µs and one break's glue "
            f"{_num(c.glue_us)} µs (a probe of two tiny graphs split by a break, profiled "
            f"alongside, median of {c.probe_calls} calls)"
        )
    return text


def action_title(action: Action, report: Report, display: Display) -> str:
    """What to do, and for a measured variant accepted on the default mode's own numerics,
    both differences from eager."""
    title = actions.action_title(action, report, display)
    note = actions.numerics_note(action)
    return f"{title} ({note})" if note else title


def action_parts(
    action: Action, report: Report, display: Display, numerics_shared: bool = False
) -> tuple[str, tuple[str, ...]]:
    """`action_title` in its parts: the short title, then its caveat and its numerics note,
    which the console shows each on a line of its own (the numerics note left out where one
    line under the actions says it for all: `numerics_shared`)."""
    title = actions.action_title_parts(action, report, display)
    notes = (
        title.caveat,
        None if numerics_shared else actions.numerics_note(action),
        search_words.unmeasured_note(action),
    )
    return title.head, tuple(n for n in notes if n)


def headline(report: Report) -> str | None:
    """One line on the whole workload: compile against eager, what the breaks cost, what to do."""
    ledger = report.ledger
    eager, default = report.mode("eager"), report.mode("default")
    if ledger is None or eager is None or eager.latency is None or default is None:
        return None
    if default.latency is None:
        return None
    ratio = eager.latency.median_ms / default.latency.median_ms
    parts = [f"compile is {ratio:.2f}x of eager here"]
    if report.breaks:
        share = _pct(ledger.saving_ms / ledger.step_ms)
        causes = f"{len(report.breaks)} root cause(s)"
        if ledger.saving_ms > 0 and _none_worth_fixing(report):
            # the first action then says nothing is worth fixing: the headline agrees
            parts.append(f"fixing the breaks would save about {share}, too little to act on "
                         f"({causes})")  # fmt: skip
        elif ledger.saving_ms > 0:
            parts.append(f"fixing the breaks saves about {share} of the step ({causes})")
        else:  # a measured all-fixed step no faster than default: no saving, not a negative one
            parts.append(f"fixing the breaks saves nothing measurable ({share}; {causes})")
    if ledger.library_ms > 0:
        parts.append(f"{_pct(ledger.library_ms / ledger.step_ms)} more needs a library change")
    if ledger.measured_all_fixed_ms:
        shown = _all_fixed_source(ledger)
        parts.append(
            f"{shown} measured {ledger.measured_all_fixed_ms:.3f} ms "
            f"({eager.latency.median_ms / ledger.measured_all_fixed_ms:.2f}x of eager)"
        )
    parts.append(_what_first(report))
    unsettled = _unsettled_lead(report)
    if unsettled:
        parts.append(unsettled)
    return "; ".join(parts)


def _what_first(report: Report) -> str:
    """ "do #1 first" only where #1 saves time per call; else that there is nothing to do."""
    if any(a.outcome == ActionOutcome.DO for a in report.actions):
        return "do #1 first"
    tried = any(
        a.outcome in (ActionOutcome.SLOWER, ActionOutcome.NO_EFFECT) for a in report.actions
    )
    return "nothing to do: no change " + ("tried here " if tried else "") + "saves time per call"


def _unsettled_lead(report: Report) -> str | None:
    """The measured change that would lead if its saving held, which the runs judged cannot
    tell from zero (`Action.runs_to_settle`): the largest such saving, named."""
    step = report.ledger.step_ms if report.ledger else None
    found = [
        (a.saving_ms, i, a) for i, a in enumerate(report.actions)
        if a.runs_to_settle is not None and a.saving_ms is not None
    ]  # fmt: skip
    if not found or not step:
        return None
    saving, _, action = max(found)
    judged = "one run" if report.settings.runs <= 1 else f"{report.settings.runs} runs"
    label = actions.action_label(action, report, displayer(report))
    return (
        f"{label} may save {_pct(saving / step)} of the step, which {judged} cannot tell from "
        f"zero (about {action.runs_to_settle} runs judged together would)"
    )


def _none_worth_fixing(report: Report) -> bool:
    """Every break's verdict is "ignore" (too little, or inside the noise)."""
    return all(
        e.decision is not None and e.decision.verdict == Verdict.IGNORE for e in report.breaks
    )


def _all_fixed_source(ledger: Ledger) -> str:
    source = ledger.measured_all_fixed_source or "fullgraph"
    if source.startswith("patch:"):  # a patch what-if's key: `patch:KIND@LINE`
        kind, _, line = source.removeprefix("patch:").partition("@")
        if kind == "library_option":
            return "the library option"
        lines = line.replace("+", " and ")  # a combined patch's key: `@328+331`
        return f"the {kind.replace('_', ' ')} patch at line{'s' if '+' in line else ''} {lines}"
    return "fullgraph=True" if source == "fullgraph" else knob_code(source)


def recompile_recommendation(r: RecompileAdvice) -> str:
    if r.cause == "size":
        return (
            f"dimension {r.dim} of an input changes between calls: mark it dynamic "
            f"(`torch._dynamo.mark_dynamic(tensor, {r.dim})` before the first call) or compile "
            "with `dynamic=True`; or pad/bucket to a few fixed sizes"
        )
    return {
        "dtype": "an input's dtype changes between calls: cast inputs to one dtype before the call",
        "rank": "an input's number of dimensions changes: keep the rank fixed (reshape before)",
        "requires_grad": (
            "requires_grad differs between calls: keep it stable or run under torch.no_grad()"
        ),
        "device": "an input moves between devices: keep inputs on one device",
        "value": (
            "the graph specialised on a Python value that changes: pass it as a tensor (a "
            "value read with `.item()` stays a tensor; a learning rate or step counter becomes "
            "`torch.tensor(...)`), keep it constant, or mark the int dynamic"
        ),
    }.get(r.cause, f"fix the failing guard: {r.reason[:160]}")


def ledger_note(ledger: Ledger) -> str | None:
    """How the projection stands against what was measured, the raw estimate beside it."""
    notes = []
    estimate = ledger.estimated_projected_ms
    if ledger.measured_all_fixed_ms is not None and ledger.projection_miss is not None:
        source = ledger.measured_all_fixed_source or "fullgraph"
        shown = "fullgraph=True" if source == "fullgraph" else f"`{source}`"
        measured = _ms(ledger.measured_all_fixed_ms)
        notes.append(
            f"estimated all-fixed step {_ms(estimate)} ms against {measured} ms measured with "
            f"{shown} ({ledger.projection_miss:+.0%}); the measurement decides"
        )
    if ledger.projection_basis == "eager":
        notes.append(
            f"the estimate ({_ms(estimate)} ms) is below eager, which nothing measured beats: "
            f"the projection is held at eager's {_ms(ledger.eager_ms)} ms"
        )
    if ledger.library_ms > 0:
        notes.append(
            f"{_ms(ledger.library_ms)} ms more is estimated for breaks in library code that need "
            "a library change; it is not in the projection"
        )
    return "; ".join(notes) or None


def segment_label(kind: str, compile_id: str | None, break_id: str | None) -> str:
    if kind == "compiled":
        return f"compiled region {compile_id}" if compile_id else "compiled region"
    if kind == "gap":
        if compile_id is None:
            return "eager gap after a region (a break)"
        return f"eager gap after {compile_id}" + (f" ({break_id})" if break_id else "")
    if kind == "eager":
        return f"eager (skipped frame, {break_id})" if break_id else "eager"
    if kind == "backward":
        return f"backward of {compile_id}" if compile_id else "backward graph"
    if kind == "autograd":
        return f"autograd hop into {compile_id}'s backward" if compile_id else "autograd engine"
    return kind.replace("_", " ")

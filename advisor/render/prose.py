"""Every sentence a report says, written from the records' numbers.

Records carry facts and numbers; this module turns them into words: category titles, recipes
for a line, why a verdict was given, what a what-if showed, the method of the attribution, the
title of an action and the one-line verdict on the whole workload. Paths are shortened with
`display`, so a report reads the same wherever it is re-rendered.
"""

from __future__ import annotations

from collections.abc import Callable

from advisor.core.model import (
    Action,
    BreakEntry,
    BreakSite,
    Calibration,
    Decision,
    Ledger,
    Location,
    RecompileAdvice,
    Report,
    WhatIf,
)
from advisor.core.taxonomy import skipped_in_loop

Display = Callable[[str | None], str]

TITLES = {
    "data_dependent_branch": "data-dependent branch",
    "scalar_extraction": "scalar extraction (.item() / .tolist())",
    "dynamic_shape": "dynamic-shape operator (nonzero / boolean mask)",
    "numpy": "NumPy in the model",
    "print": "print() side effect",
    "logging": "logging call",
    "disabled": "torch.compiler.disable boundary",
    "third_party": "untraceable call (third-party / C extension)",
    "explicit": "explicit torch._dynamo.graph_break()",
    "other": "other unsupported construct",
}

RECIPES = {
    "data_dependent_branch": (
        "Replace the Python `if` on a tensor value at {where} (`{code}`) with tensor code: "
        "`torch.where(cond, a, b)` when both sides are cheap to compute, or "
        "`torch.cond(pred, true_fn, false_fn, operands)` when they are not. Both keep the "
        "decision on the device and the function in one graph."
    ),
    "scalar_extraction": (
        "Keep the value a tensor at {where} (`{code}`): compare and accumulate with tensor "
        "ops (e.g. `done = done | (tok == eos)`) and read it back to Python once, after the "
        "hot loop or every N steps. If the scalar must be a Python number inside the graph, "
        "set `torch._dynamo.config.capture_scalar_outputs = True` so Dynamo traces it as a "
        "symbolic value instead of breaking."
    ),
    "dynamic_shape": (
        "Avoid a data-dependent output shape at {where} (`{code}`): compute with a fixed "
        "capacity (dense masks, `torch.where`, `scatter`/`index_add` over all slots, top-k "
        "with a fixed k) so shapes do not depend on values. Or set "
        "`torch._dynamo.config.capture_dynamic_output_shape_ops = True` to trace it with "
        "unbacked symbolic sizes."
    ),
    "numpy": (
        "Replace the NumPy call at {where} (`{code}`) with the equivalent torch op on the "
        "tensor itself (no `.numpy()`/`torch.from_numpy` round trip): it stays on the "
        "device and inside the graph."
    ),
    "print": (
        "Move the print at {where} (`{code}`) out of the compiled function (log after the "
        "call returns, or every N steps), or let Dynamo reorder it after the graph: "
        "`torch._dynamo.config.reorderable_logging_functions = {{print}}`. If it is leftover "
        "debug output, delete it."
    ),
    "logging": (
        "Move the logging call at {where} (`{code}`) out of the compiled function (log "
        "from the caller after the step), or guard it so it runs outside compiled code. "
        "`torch._dynamo.config.ignore_logging_functions` removes the break but turns the "
        "call into a no-op under compile."
    ),
    "disabled": (
        "The function called at {where} (`{code}`) is wrapped in `torch.compiler.disable`, "
        "so every call leaves the graph. Shrink the disabled region to the part that truly "
        "cannot be traced and call it outside the hot path, or remove the decorator if the "
        "body is plain tensor code (a rewrite: its work then compiles too)."
    ),
    "third_party": (
        "Dynamo cannot trace the call at {where} (`{code}`). Isolate it: move it out of "
        "the compiled region, or register it as an opaque op with "
        "`@torch.library.custom_op` (plus a `register_fake` shape function) so the graph "
        "keeps going around it; `torch.compiler.disable` on a small wrapper is the quick "
        "version of the same idea."
    ),
    "explicit": (
        "Remove the explicit `torch._dynamo.graph_break()` at {where} if it is no longer "
        "needed; it splits the graph on every call."
    ),
    "other": (
        "Dynamo breaks the graph at {where} (`{code}`). Follow the registry hints below; "
        "the usual fix is to express this step in tensor operations Dynamo can trace, or "
        "to move it out of the compiled function."
    ),
}

SKIPPED_RECIPE = (
    "Dynamo could not compile any part of the frame `{function}`, so it runs entirely in eager "
    "(plus Dynamo's cost of entering it). Fix the break so the frame compiles, or keep the "
    "untraceable part out of compiled code (`torch.compiler.disable` on it, or compile the code "
    "around it instead of this frame)."
)

LOOP_RECIPE = (
    "The break sits inside a loop, so Dynamo skipped the whole frame `{function}` and it runs "
    "entirely in eager. Fix the break itself or move it out of the loop body (e.g. hoist the "
    "call before/after the loop, or compile the loop body as its own function) so the frame "
    "compiles again."
)

LIBRARY_RECIPE = (
    "The break happens inside library code ({library}){reached}: that code is not yours to "
    "change. Keep the call out of the compiled region: make it before or after the compiled "
    "function, wrap it in `torch.compiler.disable`, or compile a smaller function that does "
    "not include it. Check the library's own torch.compile support (a newer release, or a "
    "documented compile-friendly option) before working around it."
)

BEHAVIOUR = {
    "nested_prints_dropped": (
        "print calls reached from nested (inlined) functions are dropped under this knob, "
        "not reordered"
    ),
    "logging_noop": "the logging call becomes a no-op in compiled code",
}

FIX_WORDS = {
    "isolate": "moving or isolating it",
    "rewrite": "rewriting it in tensor code",
    "delete": "deleting it",
    "knob": "the measured config knob",
}


def location(loc: Location | None, display: Display) -> str:
    return f"{display(loc.file)}:{loc.line}" if loc is not None else "?"


def category_title(key: str) -> str:
    return TITLES.get(key, key)


def skipped_note(site: BreakSite) -> str | None:
    """Why the whole frame runs in eager, in words."""
    if not site.frame_skipped:
        return None
    if skipped_in_loop(site):
        return f"the break sits inside a loop, so Dynamo skipped the whole frame ({site.skip_code})"
    if site.skip_code:
        return f"Dynamo skipped the whole frame ({site.skip_code})"
    return "Dynamo could not compile any part of the frame"


def recipe(entry: BreakEntry, report: Report, display: Display) -> str:
    site = entry.site
    decision = entry.decision
    where = location(site.where, display)
    code = site.where.code or "?"
    if decision is not None and decision.library and decision.basis != "measured":
        text = LIBRARY_RECIPE.format(library=where, reached=_reached(site, display))
        return text + (("\nRegistry hints: " + " ".join(site.hints)) if site.hints else "")
    key = decision.category if decision else "other"
    text = RECIPES.get(key, RECIPES["other"]).format(where=where, code=code)
    if site.frame_skipped:
        lead = LOOP_RECIPE if skipped_in_loop(site) else SKIPPED_RECIPE
        text = lead.format(function=site.where.function or "?") + "\n" + text
    if key == "other" and site.hints:
        text += "\nRegistry hints: " + " ".join(site.hints)
    return text + _knob_note(entry, report, display)


def recipe_first_sentence(entry: BreakEntry, display: Display) -> str:
    """The recipe's first sentence: what to do (after a skipped frame's lead, if any). Cut from
    the template before the line's path and source are filled in, so they cannot end it early."""
    site, decision = entry.site, entry.decision
    if decision is None:
        return ""
    where = location(site.where, display)
    if decision.library and decision.basis != "measured":
        lead = _first_sentence(LIBRARY_RECIPE)
        return lead.format(library=where, reached=_reached(site, display))
    template = RECIPES.get(decision.category, RECIPES["other"])
    return _first_sentence(template).format(where=where, code=site.where.code or "?")


def _first_sentence(template: str) -> str:
    """Up to the first full stop that ends a sentence: followed by a space or the end, and
    outside `code` and parentheses (`(e.g. ...)`)."""
    depth, in_code = 0, False
    for i, char in enumerate(template):
        in_code ^= char == "`"
        depth += 0 if in_code else (char == "(") - (char == ")")
        if char == "." and not in_code and depth == 0 and template[i + 1 : i + 2] in (" ", ""):
            return template[: i + 1]
    return template


def _reached(site: BreakSite, display: Display) -> str:
    reached = site.reached_from
    if reached is None:
        return ""
    return f", reached from {location(reached, display)} (`{reached.code or '?'}`)"


def _knob_note(entry: BreakEntry, report: Report, display: Display) -> str:
    decision = entry.decision
    w = report.what_if(entry.what_if_knob)
    if decision is None or w is None or decision.knob_outcome is None:
        return ""
    if decision.basis == "measured":
        return (
            f"\nMeasured here: `{w.knob}` removes this break and saves "
            f"{_ms(w.saving_ms)} ms per call with outputs matching eager: set it."
        )
    if decision.knob_outcome == "moved":
        moved = ", ".join(location(b, display) for b in w.new_breaks) or "another line"
        return (
            f"\nMeasured here: `{w.knob}` only moves the break (to {moved}), saving "
            f"{_ms(w.saving_ms)} ms; the code change has to cover that line too."
        )
    if decision.knob_outcome in ("kept", "failed"):
        return f"\nMeasured here: `{w.knob}` does not fix this break; make the code change."
    return ""


VERDICT_REASONS = {
    "below_noise": "within noise",
    "below_share": "small",
    "never_ran": "never ran",
}


def verdict_label(d: Decision) -> str:
    """The verdict as tables show it: an `ignore` says why, because a cost inside the noise of
    the measurement (unknown: it may matter) is not a cost that is small (known not to)."""
    if d.verdict == "ignore" and d.reason in VERDICT_REASONS:
        return f"ignore ({VERDICT_REASONS[d.reason]})"
    return d.verdict


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
    amount = f"{basis} of {fix}: {_ms(d.saving_ms)} ms/call"
    if d.reason == "below_share":
        verdict = (
            f"{amount} is below {_pct(d.threshold_ms / step if step else None)} of the "
            f"{_ms(step)} ms step ({_ms(d.threshold_ms)} ms)"
        )
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


def what_if_line(w: WhatIf) -> str:
    if w.status != "measured":
        return f"`{w.knob}`: failed ({w.error or 'no detail'})"
    ci = f"[{_ms(w.saving_ci_ms[0])}, {_ms(w.saving_ci_ms[1])}]" if w.saving_ci_ms else "-"
    match = {True: "yes", False: "NO", None: "-"}[w.matches_eager]
    if w.fix == "guards":
        return (
            f"`{w.setting}({w.knob})` (the same compiled code, guards not evaluated): "
            f"{_ms(w.baseline_ms)} → {_ms(w.variant_ms)} ms/call, saving {_ms(w.saving_ms)} ms, "
            f"95% CI {ci}; matches eager: {match}; {w.rounds} rounds, interleaved"
        )
    removed = f"removes {len(w.removed)} of {len(w.targets)} targeted break(s)"
    if w.new_breaks:
        removed += f", {len(w.new_breaks)} new break(s) in their place"
    timing = "interleaved" if w.interleaved else "one after the other (the original skips frames)"
    return (
        f"`{w.knob}`: {_ms(w.baseline_ms)} → {_ms(w.variant_ms)} ms/call, saving "
        f"{_ms(w.saving_ms)} ms, 95% CI {ci}; {removed}; matches eager: {match}; "
        f"{w.rounds} rounds, {timing}"
        + ("; the medians' 95% intervals did not reach the target" if w.target_met is False else "")
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
    elif w.behaviour_change in ("logging_noop",):
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
    n = len(action.breaks)
    if action.kind == "knob":
        return f"Set `torch._dynamo.config.{action.knob}` (removes {n} break(s), measured)"
    if action.kind == "fullgraph":
        return "Compile with `fullgraph=True`: it compiled, matched eager and ran faster (measured)"
    if action.kind == "guards":
        stance = "`torch.compiler.set_stance(skip_guard_eval_unsafe=True)` once warm"
        measured = " (measured)" if action.measured else ""
        if report.breaks:
            return f"Reduce guard evaluation: fewer graphs (fix the breaks), or {stance}{measured}"
        return (
            f"Reduce guard evaluation: {stance} (only while inputs keep their shapes and types)"
            f"{measured}"
        )
    if action.kind == "dynamic":
        dims = ", ".join(str(d) for d in action.dims) or "?"
        return f"Mark the changing dimension(s) {dims} dynamic (`torch._dynamo.mark_dynamic`)"
    if action.kind == "recompile":
        return "Stop the recompiles: keep the guarded values stable between calls"
    entry = report.entry(action.breaks[0]) if action.breaks else None
    what = category_title(entry.decision.category) if entry and entry.decision else "break"
    verb = {"isolate": "Isolate", "rewrite": "Rewrite", "delete": "Delete"}.get(
        action.fix or "", "Fix"
    )
    title = f"{verb} the {what} at {location(action.where, display)}"
    in_library = entry is not None and entry.decision is not None and entry.decision.library
    if in_library and action.fix != "isolate" and action.where == entry.site.where:
        # The saving is a change to code the user does not own: say who can make it.
        title += " (library code: a fix upstream, or the library's compile-friendly option)"
    return title


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
        parts.append(
            f"breaks cost about {_pct(ledger.saving_ms / ledger.step_ms)} of the step "
            f"({len(report.breaks)} root cause(s))"
        )
    if ledger.measured_all_fixed_ms:
        parts.append(
            f"fullgraph=True measured {ledger.measured_all_fixed_ms:.3f} ms "
            f"({eager.latency.median_ms / ledger.measured_all_fixed_ms:.2f}x of eager)"
        )
    if report.actions:
        parts.append("do #1 first")
    return "; ".join(parts)


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
            "the graph specialised on a Python value that changes: pass it as a tensor, keep "
            "it constant, or mark the int dynamic"
        ),
    }.get(r.cause, f"fix the failing guard: {r.reason[:160]}")


def ledger_note(ledger: Ledger) -> str | None:
    if ledger.measured_all_fixed_ms is None or ledger.projection_miss is None:
        return None
    return (
        f"projected all-fixed step {ledger.projected_ms:.3f} ms against "
        f"{ledger.measured_all_fixed_ms:.3f} ms measured with fullgraph=True "
        f"({ledger.projection_miss:+.0%}); the measurement decides"
    )


def segment_label(kind: str, compile_id: str | None, break_id: str | None) -> str:
    if kind == "compiled":
        return f"compiled region {compile_id}" if compile_id else "compiled region"
    if kind == "gap":
        if compile_id is None:
            return "eager gap after a region (a break)"
        return f"eager gap after {compile_id}" + (f" ({break_id})" if break_id else "")
    if kind == "eager":
        return f"eager (skipped frame, {break_id})" if break_id else "eager"
    return kind.replace("_", " ")


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:.1f}"
    if abs(value) >= 1:
        return f"{value:.3g}" if abs(value) < 10 else f"{value:.2f}"
    return f"{value:.4f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"

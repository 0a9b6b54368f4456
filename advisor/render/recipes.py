"""What a break is called and how to fix it, in words: category titles, the recipe for a
break's line (a library break, a skipped frame, a measured knob each change it), and why a whole
frame runs in eager.
"""

from __future__ import annotations

from advisor.core.kinds import WhatIfKind
from advisor.core.model import BreakEntry, BreakSite, Report, WhatIf
from advisor.core.paths import is_installed
from advisor.core.taxonomy import skipped_in_loop
from advisor.render.formatting import Display, fmt_ms, knob_code, location
from advisor.render.patch_words import patch_summary
from advisor.render.ranks import DDP_RECIPE

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
    "training": "backward / optimizer call inside the compiled function",
    "other": "other unsupported construct",
    "ddp": "DistributedDataParallel's own code",
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
    "training": (
        "Take `{code}` out of the compiled function: compile the model (`model.compile()` or "
        "`torch.compile(model)`) and run the loss's backward and the optimizer step around it; "
        "the optimizer step can be compiled on its own (`torch.compile(optimizer.step)`), and "
        "`torch._dynamo.config.compiled_autograd = True` compiles the backward. Dynamo does not "
        "trace the autograd engine or the optimizer's own code, so each call splits the step "
        "at {where}. The measured alternatives are in the actions; this is a change of where "
        "torch.compile goes, not of this line's code."
    ),
    "other": (
        "Dynamo breaks the graph at {where} (`{code}`). Follow the registry hints below; "
        "the usual fix is to express this step in tensor operations Dynamo can trace, or "
        "to move it out of the compiled function."
    ),
}

RECIPES["ddp"] = DDP_RECIPE

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
    if key == "training" and site.reached_from and is_installed(site.where.file):
        where = location(site.reached_from, display)  # the user's call into torch's own code
        code = site.reached_from.code or "?"
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


def _what_patch_does(w: WhatIf) -> str:
    return patch_summary(w.patch) if w.patch is not None else "a rewrite of the line"


def _where_the_diff_is(w: WhatIf) -> str:
    if w.patch is not None and w.patch.redacted:
        return "(a run without --redact shows the diff)"
    return "(report.md shows the diff)"


def _knob_note(entry: BreakEntry, report: Report, display: Display) -> str:
    decision = entry.decision
    w = report.what_if(entry.what_if_knob)
    if decision is None or w is None or decision.knob_outcome is None:
        return ""
    if decision.basis == "measured" and w.kind == WhatIfKind.PATCH and not w.deletes_call:
        return (
            f"\nMeasured here: the patch ({_what_patch_does(w)}) removes this break "
            f"and saves {fmt_ms(w.saving_ms)} ms per call with outputs matching eager: apply it "
            f"{_where_the_diff_is(w)}."
        )
    if decision.basis == "measured" and w.deletes_call:
        call = w.patch.names[0] if w.patch and w.patch.names else w.knob.split(":", 1)[1]
        kept = entry.parts.python_work_ms if decision.fix == "isolate" else 0.0
        moved = (
            f"; moving it out keeps the call's own {fmt_ms(kept)} ms, so that saves "
            f"{fmt_ms(decision.saving_ms)} ms"
            if kept
            else ""
        )
        return (
            f"\nMeasured here: with `{call}` deleted the step is {fmt_ms(w.saving_ms)} ms "
            f"per call shorter (what deleting the call saves){moved}."
        )
    if decision.basis == "measured" and w.kind == WhatIfKind.UNDISABLE:
        return (
            f"\nMeasured here: with the `torch.compiler.disable` boundary removed, Dynamo traces "
            f"the body and the step is {fmt_ms(w.saving_ms)} ms per call shorter with outputs "
            "matching eager: remove it."
        )
    if decision.basis == "measured":
        return (
            f"\nMeasured here: {knob_code(w.knob)} removes this break and saves "
            f"{fmt_ms(w.saving_ms)} ms per call with outputs matching eager: set it."
        )
    if decision.knob_outcome == "moved":
        moved = ", ".join(location(b, display) for b in w.new_breaks) or "another line"
        return (
            f"\nMeasured here: {knob_code(w.knob)} only moves the break (to {moved}), saving "
            f"{fmt_ms(w.saving_ms)} ms; the code change has to cover that line too."
        )
    if decision.knob_outcome in ("kept", "failed"):
        return (
            f"\nMeasured here: {knob_code(w.knob)} does not fix this break; make the code change."
        )
    return ""

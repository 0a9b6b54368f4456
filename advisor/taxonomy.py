"""What kind of break this is, what to do about it, and which config knob (if any) removes it.

Classification goes by registry code first, then by the gb_type text and the user's source line,
so codes we have never seen still land in a sensible category; the last resort is the registry's
own hints. Recipes name the break's file:line and source text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from advisor.model import BreakRecord


@dataclass(frozen=True)
class Knob:
    """A Dynamo config change that can remove a break, measured as a what-if."""

    name: str  # human form, e.g. "capture_scalar_outputs=True"
    setting: str  # the config attribute
    value_spec: str  # how to build the value: "true", "print", "logger:<method>"
    behaviour_note: str | None = None  # a known behaviour change to warn about


@dataclass(frozen=True)
class Category:
    key: str
    title: str
    action: str  # "rewrite" or "isolate": what to do when the break is worth fixing
    recipe: str  # template: {where}, {code}, {function}
    knob: Knob | None = None


_CATEGORIES: dict[str, Category] = {
    c.key: c
    for c in (
        Category(
            "data_dependent_branch",
            "data-dependent branch",
            "rewrite",
            "Replace the Python `if` on a tensor value at {where} (`{code}`) with tensor code: "
            "`torch.where(cond, a, b)` when both sides are cheap to compute, or "
            "`torch.cond(pred, true_fn, false_fn, operands)` when they are not. Both keep the "
            "decision on the device and the function in one graph.",
        ),
        Category(
            "scalar_extraction",
            "scalar extraction (.item() / .tolist())",
            "rewrite",
            "Keep the value a tensor at {where} (`{code}`): compare and accumulate with tensor "
            "ops (e.g. `done = done | (tok == eos)`) and read it back to Python once, after the "
            "hot loop or every N steps. If the scalar must be a Python number inside the graph, "
            "set `torch._dynamo.config.capture_scalar_outputs = True` so Dynamo traces it as a "
            "symbolic value instead of breaking.",
            Knob("capture_scalar_outputs=True", "capture_scalar_outputs", "true"),
        ),
        Category(
            "dynamic_shape",
            "dynamic-shape operator (nonzero / boolean mask)",
            "rewrite",
            "Avoid a data-dependent output shape at {where} (`{code}`): compute with a fixed "
            "capacity (dense masks, `torch.where`, `scatter`/`index_add` over all slots, top-k "
            "with a fixed k) so shapes do not depend on values. Or set "
            "`torch._dynamo.config.capture_dynamic_output_shape_ops = True` to trace it with "
            "unbacked symbolic sizes.",
            Knob(
                "capture_dynamic_output_shape_ops=True", "capture_dynamic_output_shape_ops", "true"
            ),
        ),
        Category(
            "numpy",
            "NumPy in the model",
            "rewrite",
            "Replace the NumPy call at {where} (`{code}`) with the equivalent torch op on the "
            "tensor itself (no `.numpy()`/`torch.from_numpy` round trip): it stays on the "
            "device and inside the graph.",
        ),
        Category(
            "print",
            "print() side effect",
            "isolate",
            "Move the print at {where} (`{code}`) out of the compiled function (log after the "
            "call returns, or every N steps), or let Dynamo reorder it after the graph: "
            "`torch._dynamo.config.reorderable_logging_functions = {{print}}`.",
            Knob(
                "reorderable_logging_functions={print}",
                "reorderable_logging_functions",
                "print",
                "print calls reached from nested (inlined) functions are dropped under this "
                "knob, not reordered",
            ),
        ),
        Category(
            "logging",
            "logging call",
            "isolate",
            "Move the logging call at {where} (`{code}`) out of the compiled function (log "
            "from the caller after the step), or guard it so it runs outside compiled code. "
            "`torch._dynamo.config.ignore_logging_functions` removes the break but turns the "
            "call into a no-op under compile.",
            Knob(
                "ignore_logging_functions={Logger.<method>}",
                "ignore_logging_functions",
                "logger",
                "the logging call becomes a no-op in compiled code",
            ),
        ),
        Category(
            "disabled",
            "torch.compiler.disable boundary",
            "isolate",
            "The function called at {where} (`{code}`) is wrapped in `torch.compiler.disable`, "
            "so every call leaves the graph. Shrink the disabled region to the part that truly "
            "cannot be traced (or remove the decorator if the body is plain tensor code), and "
            "call it outside the hot path.",
        ),
        Category(
            "third_party",
            "untraceable call (third-party / C extension)",
            "isolate",
            "Dynamo cannot trace the call at {where} (`{code}`). Isolate it: move it out of "
            "the compiled region, or register it as an opaque op with "
            "`@torch.library.custom_op` (plus a `register_fake` shape function) so the graph "
            "keeps going around it; `torch.compiler.disable` on a small wrapper is the quick "
            "version of the same idea.",
        ),
        Category(
            "explicit",
            "explicit torch._dynamo.graph_break()",
            "rewrite",
            "Remove the explicit `torch._dynamo.graph_break()` at {where} if it is no longer "
            "needed; it splits the graph on every call.",
        ),
        Category(
            "other",
            "other unsupported construct",
            "rewrite",
            "Dynamo breaks the graph at {where} (`{code}`). Follow the registry hints below; "
            "the usual fix is to express this step in tensor operations Dynamo can trace, or "
            "to move it out of the compiled function.",
        ),
    )
}

LOOP_SKIP_CODE = "GB7000"  # "graph break in loop": chained after the break that caused it

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

_CODE_CATEGORY = {
    "GB0170": "data_dependent_branch",
    "GB0124": "scalar_extraction",
    "GB0033": "scalar_extraction",
    "GB0036": "dynamic_shape",
    "GB0098": "disabled",
    "GB0099": "disabled",
    "GB0291": "logging",
    "GB6215": "logging",
    "GB0025": "explicit",
    "GB0007": "third_party",
    "GB0008": "third_party",
    "GB0009": "third_party",
    "GB0147": "third_party",
    "GB0148": "third_party",
    "GB0194": "third_party",
}

_TYPE_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"data-dependent branch|generic_jump", re.I), "data_dependent_branch"),
    (
        re.compile(r"\.item\(\)|tolist|scalar output|data dependent operator", re.I),
        "scalar_extraction",
    ),
    (re.compile(r"dynamic shape|dynamic output shape", re.I), "dynamic_shape"),
    (re.compile(r"numpy", re.I), "numpy"),
    (re.compile(r"logging|logger", re.I), "logging"),
    (re.compile(r"torch\.compiler\.disable", re.I), "disabled"),
    (
        re.compile(
            r"marked as skipped|C extension|unsupported function call|unsupported method", re.I
        ),
        "third_party",
    ),
    (re.compile(r"graph_break\(\)", re.I), "explicit"),
)

_PRINT_CALL = re.compile(r"(^|[^\w.])print\s*\(")
_LOG_CALL = re.compile(
    r"\b(?:log|logger|logging|LOG|LOGGER|_log|_logger)\w*\.(debug|info|warning|warn|error|"
    r"exception|critical|log)\s*\("
)
_NUMPY_CALL = re.compile(r"\b(np|numpy)\.|\.numpy\(\)")


def category_for(brk: BreakRecord) -> Category:
    key = _CODE_CATEGORY.get(brk.gb_code or "")
    text = f"{brk.gb_type}\n{brk.explanation}"
    if key is None and brk.gb_code == "GB0059":
        key = "print" if "`print`" in text or _PRINT_CALL.search(brk.code) else None
    if key is None:
        for pattern, candidate in _TYPE_PATTERNS:
            if pattern.search(text):
                key = candidate
                break
    if key is None or key == "other":
        # The source line often tells what the registry type does not.
        if _PRINT_CALL.search(brk.code):
            key = "print"
        elif _LOG_CALL.search(brk.code) or "/logging/" in brk.file:
            key = "logging"
        elif _NUMPY_CALL.search(brk.code):
            key = "numpy"
        elif _is_third_party(brk.file):
            key = "third_party"
        else:
            key = "other"
    return _CATEGORIES[key]


def logger_method(code: str) -> str | None:
    match = _LOG_CALL.search(code)
    if not match:
        return None
    method = match.group(1)
    return "warning" if method == "warn" else method


def _is_third_party(path: str) -> bool:
    return any(part in path for part in ("site-packages", "dist-packages", "/lib/python3"))


def skipped_in_loop(brk: BreakRecord) -> bool:
    return brk.frame_skipped and brk.skip_code == LOOP_SKIP_CODE


def skipped_frame_note(brk: BreakRecord) -> str | None:
    """Why the whole frame runs in eager, in words, for a break whose frame Dynamo skipped."""
    if not brk.frame_skipped:
        return None
    if skipped_in_loop(brk):
        return f"the break sits inside a loop, so Dynamo skipped the whole frame ({brk.skip_code})"
    if brk.skip_code:
        return f"Dynamo skipped the whole frame ({brk.skip_code})"
    return "Dynamo could not compile any part of the frame"


def in_library(path: str | None) -> bool:
    """Installed code (torch, third-party packages, the standard library): not the user's to
    edit."""
    if not path:
        return False
    return _is_third_party(path) or path.startswith("<")


def library_location(brk: BreakRecord) -> tuple[str, int] | None:
    """(file, line) of the library code the break happens in, when the user cannot edit it:
    the reported line itself (no user frame inside the compiled function), or the library line
    below it where Dynamo stopped."""
    if brk.break_file and in_library(brk.break_file):
        return brk.break_file, brk.break_line or 0
    if in_library(brk.file):
        return brk.file, brk.line
    return None


LIBRARY_RECIPE = (
    "The break happens inside library code ({library}){reached}: that code is not yours to "
    "change. Keep the call out of the compiled region: make it before or after the compiled "
    "function, wrap it in `torch.compiler.disable`, or compile a smaller function that does "
    "not include it. Check the library's own torch.compile support (a newer release, or a "
    "documented compile-friendly option) before working around it."
)


def recipe_for(brk: BreakRecord, category: Category, where: str, library: str | None = None) -> str:
    """The change to make for this break at `where` (its user file:line, as shown); `library`
    is the library file:line it happens in, if any (see `library_location`)."""
    if library is not None:
        reached = "" if in_library(brk.file) else f", reached from {where} (`{brk.code or '?'}`)"
        text = LIBRARY_RECIPE.format(library=library, reached=reached)
        if brk.hints:
            text += "\nRegistry hints: " + " ".join(brk.hints)
        return text
    text = category.recipe.format(where=where, code=brk.code or "?", function=brk.function or "?")
    if brk.frame_skipped:
        lead = LOOP_RECIPE if skipped_in_loop(brk) else SKIPPED_RECIPE
        text = lead.format(function=brk.function or "?") + "\n" + text
    if category.key == "other" and brk.hints:
        text += "\nRegistry hints: " + " ".join(brk.hints)
    return text


def knob_for(brk: BreakRecord, category: Category) -> Knob | None:
    knob = category.knob
    if knob is None:
        return None
    if knob.value_spec == "logger":
        method = logger_method(brk.code)
        if method is None:
            return None
        return Knob(
            f"ignore_logging_functions={{Logger.{method}}}",
            knob.setting,
            f"logger:{method}",
            knob.behaviour_note,
        )
    return knob

"""The words for actions and what-ifs: what to do, where, and the numbers behind it.

An action's title needs a little of its report besides the action (the entry it acts on, the
step, how eager compares): `ActionContext` holds those facts, so a title can be written from a
saved summary (a zoo row) as well as from a whole report.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from advisor.core.errors import first_line
from advisor.core.kinds import WhatIfKind
from advisor.core.model import Action, BreakEntry, CodeUnit, ModeResult, Report, WhatIf
from advisor.core.paths import is_installed
from advisor.core.taxonomy import DDP_KNOB, KNOB_JOIN
from advisor.judge.numerics import DEFAULT_DIFF_MULTIPLE
from advisor.render.formatting import Display, fmt_ms, knob_code, location
from advisor.render.patch_words import patch_caveat, patch_summary
from advisor.render.ranks import DDP_NO_OVERLAP
from advisor.render.recipes import category_title

ALLOCATOR_EFFECT = (
    "freed memory is reused, not handed back and faulted in again; jemalloc or tcmalloc "
    "preloaded do the same (only the glibc setting was measured)"
)
GUARD_CONDITION = (
    "safe only while every call keeps the shapes, dtypes and Python values the guards check: a "
    "changed one silently runs code compiled for the old ones"
)


@dataclass(frozen=True)
class ActionContext:
    """The facts of its report an action's title uses."""

    workload: str  # the workload's name
    entry: BreakEntry | None = None  # the entry its first break is
    has_breaks: bool = False
    first: bool = False  # it is the report's first action
    step_ms: float | None = None  # the default-mode step (the ledger's)
    eager_ratio: float | None = None  # eager median / default median
    compile_error: str | None = None  # why the default mode failed, when it did


def action_context(action: Action, report: Report) -> ActionContext:
    eager, default = report.mode("eager"), report.mode("default")
    ratio = None
    if eager and eager.latency and default and default.latency and default.latency.median_ms:
        ratio = eager.latency.median_ms / default.latency.median_ms
    return ActionContext(
        workload=report.workload.name,
        entry=report.entry(action.breaks[0]) if action.breaks else None,
        has_breaks=bool(report.breaks),
        first=report.actions[:1] == (action,),
        step_ms=report.ledger.step_ms if report.ledger else None,
        eager_ratio=ratio,
        compile_error=_failure(default),
    )


def _failure(mode: ModeResult | None) -> str | None:
    if mode is None or mode.status != "failed" or mode.error is None:
        return None
    return f"{mode.error.type}: {first_line(mode.error.message)}"


@dataclass(frozen=True)
class Title:
    """An action's title as its parts: what to do, and the caveat that goes with it (what makes
    it unsafe, what it gives up). Apart so a narrow terminal can show the caveat on a line of its
    own; `text` joins them as the one-cell title of report.md, report.html and report.json."""

    head: str
    caveat: str | None = None
    joiner: str = ": "

    @property
    def text(self) -> str:
        return f"{self.head}{self.joiner}{self.caveat}" if self.caveat else self.head


def action_title(action: Action, report: Report, display: Display) -> str:
    return title_of(action, action_context(action, report), display)


def action_title_parts(action: Action, report: Report, display: Display) -> Title:
    return title_parts(action, action_context(action, report), display)


def title_of(action: Action, ctx: ActionContext, display: Display) -> str:
    return title_parts(action, ctx, display).text


def title_parts(action: Action, ctx: ActionContext, display: Display) -> Title:
    title = _TITLES.get(action.kind, _code_title)(action, ctx, display)
    return title if isinstance(title, Title) else Title(title)


def _knob(action: Action, ctx: ActionContext, display: Display) -> str | Title:
    n = len(action.breaks)
    if action.knob == DDP_KNOB.name:
        head = (
            f"Set `torch._dynamo.config.{action.knob}`: one graph instead of one per gradient "
            f"bucket{_steps(action, ctx)} (measured)"
        )
        return Title(head, DDP_NO_OVERLAP, "; ")
    knob = action.knob or ""
    together = ", together" if KNOB_JOIN in knob else ""
    code = knob_code(knob, "torch._dynamo.config.")
    return f"Set {code}{together} (removes {n} break(s), measured)"


def _fullgraph(action: Action, ctx: ActionContext, display: Display) -> str:
    # "ran faster" only where it measured faster beyond the noise: the words follow the number
    faster = action.measurable and (action.saving_ms or 0.0) > 0
    if action.matches_eager is None:
        ran = "and ran faster " if faster else ""
        return (
            f"Compile with `fullgraph=True`: it compiled {ran}(measured; its output "
            "was not compared with eager's, which changes from call to call)"
        )
    ran = ", matched eager and ran faster" if faster else " and matched eager"
    return f"Compile with `fullgraph=True`: it compiled{ran} (measured)"


def _regional(action: Action, ctx: ActionContext, display: Display) -> str:
    return (
        f"Compile {regions_summary(action.subjects)} instead of the whole "
        f"`{ctx.workload}`, the rest eager{_steps(action, ctx)} (measured)"
    )


def _split(action: Action, ctx: ActionContext, display: Display) -> str:
    modules = [u for u in action.subjects if not u.path.endswith(".step")]
    steps = ", ".join(f"`{u.path}`" for u in action.subjects if u.path.endswith(".step"))
    return (
        f"Compile the model in place ({regions_summary(tuple(modules))}: `model.compile()`) "
        f"and {steps} apart (`opt.step = torch.compile(opt.step)`) instead of the whole "
        f"`{ctx.workload}`; run backward and the rest eagerly{_steps(action, ctx)} (measured)"
    )


def _optimizer(action: Action, ctx: ActionContext, display: Display) -> str | Title:
    steps = ", ".join(f"`{u.path}`" for u in action.subjects) or "the optimizer's `step`"
    head = (
        f"Compile the optimizer step too: `opt.step = torch.compile(opt.step)` for {steps}, "
        f"the model compiled as now{_steps(action, ctx)} (measured, full training step)"
    )
    return _with_break_even(head, action)


def _whole_step(action: Action, ctx: ActionContext, display: Display) -> str | Title:
    head = (
        f"Compile the whole training step `{ctx.workload}` (forward, backward and optimizer) "
        f"instead of the model alone{_steps(action, ctx)} (measured)"
    )
    return _with_break_even(head, action)


def _module_only(action: Action, ctx: ActionContext, display: Display) -> str | Title:
    head = (
        f"Compile only the model in place ({regions_summary(action.subjects)}: "
        f"`model.compile()`) and run the rest of `{ctx.workload}` (backward, optimizer) "
        f"eagerly{_steps(action, ctx)} (measured)"
    )
    return _with_break_even(head, action)


def _optimizers(action: Action) -> str:
    """The optimizers a placement rebuilds, by the names the step holds them under."""
    return ", ".join(f"`{u.path}`" for u in action.subjects) or "the optimizer"


def _fused(action: Action, ctx: ActionContext, display: Display) -> str | Title:
    optimizers = _optimizers(action)
    head = (
        f"Build {optimizers} with `fused=True` (one fused kernel for the update, nothing more "
        f"to compile), the model compiled as now{_steps(action, ctx)} (measured, full training "
        "step)"
    )
    return head  # it adds no compile: nothing to pay back (a report judged before said so)


def _foreach(action: Action, ctx: ActionContext, display: Display) -> str | Title:
    optimizers = _optimizers(action)
    return (
        f"Build {optimizers} with `foreach=True` (one kernel per operation over all its "
        f"tensors; it has no fused kernel here), the model compiled as now{_steps(action, ctx)} "
        "(measured, full training step)"
    )


def _eager_fused(action: Action, ctx: ActionContext, display: Display) -> str | Title:
    optimizers = _optimizers(action)
    return (
        f"Do not compile `{ctx.workload}`; build {optimizers} with `fused=True` instead (one "
        f"fused kernel for the update){_steps(action, ctx)} (measured, full training step)"
    )


def _allocator(action: Action, ctx: ActionContext, display: Display) -> Title:
    setting = f"`{action.knob}`" if action.knob else "glibc's malloc settings"
    head = (
        f"Launch with the C allocator keeping freed memory ({setting} in the environment)"
        f"{_steps(action, ctx)} (measured with the glibc setting, nothing compiled differently)"
    )
    return Title(head, ALLOCATOR_EFFECT, "; ")


def _with_break_even(head: str, action: Action) -> str | Title:
    """The title with when its extra compile pays for itself, where it adds one."""
    if action.break_even_calls is None:
        return head
    return Title(head, f"its extra compile pays for itself after {break_even(action)}", "; ")


def break_even(action: Action) -> str:
    calls = action.break_even_calls or 0.0
    return f"{calls:,.0f} calls" if calls >= 1 else "its first call"


def _disable(action: Action, ctx: ActionContext, display: Display) -> str:
    return (
        f"Run {disabled_summary(action.subjects, display)} eagerly with "
        f"`torch.compiler.disable`, the rest compiled{_steps(action, ctx)} (measured)"
    )


def _eager(action: Action, ctx: ActionContext, display: Display) -> str:
    if action.fix == "compile_failed":
        return _compile_failed(action, ctx, display)
    title = f"Do not compile `{ctx.workload}`: run it eagerly{_steps(action, ctx)} (measured)"
    return title + ("; nothing measured recovers what compiling costs" if ctx.first else "")


def _compile_failed(action: Action, ctx: ActionContext, display: Display) -> str:
    where, then = action.where, "report it upstream"
    if where is not None:
        mine = not is_installed(where.file)
        then = "change that line" if mine else "report it upstream with that line"
    at = f" at {location(where, display)}" if where else ""
    return (
        f"Do not compile `{ctx.workload}`: default torch.compile fails here"
        f" ({ctx.compile_error or 'a compile error'}){at}, so run it eagerly; {then}, or "
        "disable the function that fails"
    )


def _keep(action: Action, ctx: ActionContext, display: Display) -> str:
    if action.unmeasured == "library":
        what = (
            "Keep it as it is: nothing tried from your side measured a saving; what is left "
            "is a change to library code (below, estimated)"
        )
    elif ctx.has_breaks:
        what = "Nothing worth fixing: each break saves too little to act on (its verdict says why)"
    else:
        what = "Nothing to fix: one graph, no break"
    if ctx.eager_ratio is not None:
        return f"{what}; compiled it runs {ctx.eager_ratio:.2f}x of eager"
    return what


def _guards(action: Action, ctx: ActionContext, display: Display) -> Title:
    stance = "`torch.compiler.set_stance(skip_guard_eval_unsafe=True)` once warm"
    measured = " (measured)" if action.measured else ""
    if ctx.has_breaks:
        head = f"Reduce guard evaluation: fewer graphs (fix the breaks), or {stance}{measured}"
        return Title(head, GUARD_CONDITION)
    return Title(f"Reduce guard evaluation: {stance}{measured}", GUARD_CONDITION)


def _dynamic(action: Action, ctx: ActionContext, display: Display) -> str:
    dims = ", ".join(str(d) for d in action.dims) or "?"
    return f"Mark the changing dimension(s) {dims} dynamic (`torch._dynamo.mark_dynamic`)"


def _recompile(action: Action, ctx: ActionContext, display: Display) -> str:
    return "Stop the recompiles: keep the guarded values stable between calls"


def _upstream(action: Action, ctx: ActionContext, display: Display) -> str:
    entry = ctx.entry
    what = category_title(entry.decision.category) if entry and entry.decision else "break"
    basis = "measured" if action.measured else "estimated"
    return (
        f"Needs a library change ({basis}): the {what} at {location(action.where, display)} "
        "is library code; use the library's compile-friendly option if it has one, or report it "
        "upstream with that line"
    )


def _patch(action: Action, ctx: ActionContext, display: Display) -> str | Title:
    patch = action.patch
    if patch is None:
        return _code_title(action, ctx, display)
    basis = "measured" if action.measured else "estimated"
    head = (
        f"Apply this patch at {location(action.where, display)}: {patch_summary(patch)} ({basis})"
    )
    if patch.kind == "library_option":  # no line of the user's: the library class names it
        summary = patch_summary(patch)
        head = f"{summary[:1].upper()}{summary[1:]} ({basis})"
    caveat = patch_caveat(patch)
    return Title(head, caveat, "; ") if caveat else head


def _code_title(action: Action, ctx: ActionContext, display: Display) -> str:
    entry = ctx.entry
    what = category_title(entry.decision.category) if entry and entry.decision else "break"
    verb = {"isolate": "Isolate", "rewrite": "Rewrite", "delete": "Delete"}.get(
        action.fix or "", "Fix"
    )
    return f"{verb} the {what} at {location(action.where, display)}"


_TITLES: dict[str, Callable[[Action, ActionContext, Display], str | Title]] = {
    "knob": _knob,
    "fullgraph": _fullgraph,
    "regional": _regional,
    "split": _split,
    "optimizer": _optimizer,
    "step": _whole_step,
    "module": _module_only,
    "fused": _fused,
    "foreach": _foreach,
    "eager_fused": _eager_fused,
    "allocator": _allocator,
    "disable": _disable,
    "eager": _eager,
    "keep": _keep,
    "guards": _guards,
    "dynamic": _dynamic,
    "recompile": _recompile,
    "upstream": _upstream,
    "patch": _patch,
}


def _steps(action: Action, ctx: ActionContext) -> str:
    """The step before and after, from the same pairing as the saving beside it (the step less
    the saving): the variant's own median, scaled, can differ from it by more than the saving."""
    if action.step_ms is None or ctx.step_ms is None or action.saving_ms is None:
        return ""
    return f": {fmt_ms(ctx.step_ms)} → {fmt_ms(ctx.step_ms - action.saving_ms)} ms per call"


LISTED_FUNCTIONS = 4  # a title names this many functions of each kind, then counts the rest


def disabled_summary(units: tuple[CodeUnit, ...], display: Display) -> str:
    """The functions to disable: the user's, then the library's with where to wrap them."""
    library = [u for u in units if u.where and is_installed(u.where.file)]
    mine = [u for u in units if u not in library]
    parts = []
    if mine:
        parts.append(_listed(mine, display))
    if library:
        parts.append(
            f"the library function{'s' if len(library) > 1 else ''} {_listed(library, display)} "
            "(library code: wrap it where you set up the model)"
        )
    return " and ".join(parts) or "the functions holding the breaks"


def _listed(units: list[CodeUnit], display: Display) -> str:
    shown = [_disabled(u, display) for u in units[:LISTED_FUNCTIONS]]
    rest = len(units) - len(shown)
    return ", ".join(shown) + (f" and {rest} more (report.json lists them)" if rest else "")


def _disabled(unit: CodeUnit, display: Display) -> str:
    where = f" ({location(unit.where, display)})" if unit.where else ""
    return f"`{unit.path}`{where}"


_INDEX = re.compile(r"^(?P<base>.*)\.(?P<index>\d+)$")


def regions_summary(units: tuple[CodeUnit, ...]) -> str:
    """`model.layers[0..11]` (12 × LlamaDecoderLayer), one group per module list and class."""
    groups: dict[tuple[str, str], list[int | None]] = defaultdict(list)
    for unit in units:
        match = _INDEX.match(unit.path)
        base, index = (match["base"], int(match["index"])) if match else (unit.path, None)
        groups[(base, unit.name)].append(index)
    parts = []
    for (base, name), indices in groups.items():
        numbered = sorted(i for i in indices if i is not None)
        if len(numbered) > 1:
            parts.append(f"`{base}[{numbered[0]}..{numbered[-1]}]` ({len(numbered)} × {name})")
        elif numbered:
            parts.append(f"`{base}[{numbered[0]}]` ({name})")
        else:
            parts.append(f"`{base}` ({name})")
    return ", ".join(parts) or "its sub-modules"


def shared_numerics_note(listed: list[Action]) -> str | None:
    """One line for the numerics caveat when every listed variant that has one says the same
    (all rounding, or all within the dtype's tolerance): said once under the actions rather
    than under each."""
    noted = [a for a in listed if numerics_note(a)]
    whys = {_numerics_why(a) for a in noted}
    if len(whys) != 1:
        return None
    diff = max(a.max_abs_diff or 0.0 for a in noted)
    own = max(a.default_abs_diff or 0.0 for a in noted)
    return (
        f"Every compiled variant measured here matches eager: its output differs from eager's "
        f"by at most {diff:.2g}, the default mode's by {own:.2g}: {whys.pop()}."
    )


def action_label(action: Action, report: Report, display: Display) -> str:
    """What the action changes, in a few words (a line of what was tried): the title without
    its numbers."""
    kind = action.kind.value
    if kind in TRAINING_LABELS:
        return TRAINING_LABELS[kind]
    if kind in ("knob", "setting") and action.knob:
        return knob_code(action.knob)
    if kind == "fullgraph":
        return "`fullgraph=True`"
    if kind == "regional":
        return f"placement: compile only {regions_summary(action.subjects)}"
    if kind == "disable":
        units = disabled_summary(action.subjects, display)
        return f"placement: `torch.compiler.disable` on {units}"
    if kind == "eager":
        return f"not compiling `{report.workload.name}`"
    if kind == "guards":
        return "`torch.compiler.set_stance(skip_guard_eval_unsafe=True)`"
    if kind == "patch" and action.patch is not None:
        where = location(action.where, display) if action.where else "the break"
        return f"the patch at {where}: {patch_summary(action.patch)}"
    return action_title_parts(action, report, display).head


def numerics_note(action: Action) -> str | None:
    """A measured variant's difference from eager beside the default mode's own."""
    if action.matches_eager is not True or not action.max_abs_diff:
        return None  # identical to eager's: nothing to judge
    if action.default_abs_diff is None:
        return None
    diff, own = action.max_abs_diff, action.default_abs_diff
    return (
        f"its output differs from eager's by at most {diff:.2g}, the default mode's by "
        f"{own:.2g}: {_numerics_why(action)}"
    )


def _numerics_why(action: Action) -> str:
    diff, own = action.max_abs_diff or 0.0, action.default_abs_diff
    if own and diff <= DEFAULT_DIFF_MULTIPLE * own:
        return "the same floating-point rounding"
    return "within the dtype's tolerance"


TRAINING_LABELS = {
    "split": "placement: compile the model and the optimizer step separately, the step eager",
    "optimizer": "placement: the optimizer step compiled too (`torch.compile(opt.step)`)",
    "step": "placement: the whole training step compiled instead of the model alone",
    "module": "placement: only the model compiled in place, backward and optimizer eager",
    "fused": "the optimizer built with `fused=True`, the model compiled as now",
    "foreach": "the optimizer built with `foreach=True`, the model compiled as now",
    "eager_fused": "nothing compiled, the optimizer built with `fused=True`",
    "allocator": "the C allocator keeping freed memory (glibc's `mallopt`), compiled as now",
}


def what_if_label(w: WhatIf) -> str:
    if w.kind in TRAINING_LABELS:
        return TRAINING_LABELS[w.kind]
    if w.kind in (WhatIfKind.REGIONAL, WhatIfKind.DISABLE):
        units = (
            regions_summary(w.subjects)
            if w.kind == WhatIfKind.REGIONAL
            else ", ".join(f"`{u.path}`" for u in w.subjects)
        )
        verb = "compile only" if w.kind == WhatIfKind.REGIONAL else WhatIfKind.DISABLE
        return f"placement: {verb} {units or '-'}"
    if w.kind == WhatIfKind.NOOP:
        return f"`{w.knob.split(':', 1)[1]}` made a no-op"
    if w.kind == WhatIfKind.UNDISABLE:
        return "the `torch.compiler.disable` boundary removed"
    if w.kind == WhatIfKind.PATCH and w.patch is not None:
        unit = w.subjects[0].path if w.subjects else "the function"
        return f"patch `{unit}`: {patch_summary(w.patch)}"
    return knob_code(w.knob)

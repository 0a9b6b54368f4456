"""Where torch.compile goes in a training step, as variants to measure against the default mode.

In training the time that can be won often sits outside the forward's breaks: compiling the
optimizer's step (a fused update instead of one kernel per parameter tensor) or the whole step
pays where the forward has nothing to fix. These variants are planned for every training step
(a workload that holds an optimizer), breaks or not, from the form the user compiles it in:

- the model compiled in place (`Workload(compiled_module=model)`, the step eager around it):
  "optimizer" compiles each optimizer's `step` too (`opt.step = torch.compile(opt.step)`);
  "step" compiles the whole step function instead (forward, backward and optimizer at once);
  "fused" builds each optimizer with `fused=True` where its class and the parameters' device
  and dtype have a fused kernel (one kernel for the update, no compile); "foreach" builds it
  with `foreach=True` (one kernel per operation over all tensors) where it has no fused kernel
  but a foreach one, since the fused kernel does the same work in fewer passes;
- the whole step compiled: "module" compiles only the model in place, the step (backward and
  optimizer) eager: the reverse, for a step whose compile does not pay beyond the model's
  (the model with its breaks, as `model.compile()` does; "regional" is its clean parts only);
- either form: "eager_fused" compiles nothing and builds the optimizers fused: where the
  compiled model loses to eager, the optimizer's update can still be won.

They aim at no break: the breaks a variant compiles are in its record (`new_breaks`).

A user's script timed one loop iteration per unit is a step of the first form (its hot callable
compiled in place), with the optimizers its loop steps (found through any wrapper, an
accelerate or Lightning one included, `placement.optimizers_held`); the whole step is its own
loop's body, which cannot be compiled as one function, so "step" is not planned there.

Each runs the full step (forward, backward, optimizer) like the default mode: a variant that
compiles but fails in the backward or the optimizer fails as a what-if, with its error.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from advisor.core.model import BreakSite, CodeUnit, TrainingStep
from advisor.measure import harness, placement
from advisor.measure.variants import regions_call, variant_record
from advisor.measure.whatif import Variant
from advisor.measure.workload import Workload

# The placements planned for each form of a training step (`TrainingStep.module_compiled`),
# together `TRAINING_PLACEMENTS`.
MODULE_FORM = ("optimizer", "step", "fused", "foreach", "eager_fused")
STEP_FORM = ("module", "eager_fused")


def training_step(workload: Workload) -> TrainingStep | None:
    """What the workload holds as a training step; None without an optimizer."""
    optimizers = placement.optimizers_held(workload)
    if not optimizers:
        return None
    return TrainingStep(
        optimizers=tuple(optimizers),
        module_compiled=workload.compiled_module is not None,
        modules=tuple(placement.module_roots(workload)),
        step_compilable=not placement.script_loop(workload),
    )


def planned_kinds(training: TrainingStep | None) -> tuple[str, ...]:
    """The training placements to measure for a step of this form. On the whole-step form
    "module" is planned breaks or not: where the model has breaks, the regional placement
    compiles only its clean parts, a different placement from `model.compile()`."""
    if training is None or not training.optimizers:
        return ()
    kinds = MODULE_FORM if training.module_compiled else STEP_FORM
    return tuple(k for k in kinds if k != "step" or training.step_compilable)


def training_variant(kind: str, workload: Workload, targets: list[BreakSite]) -> Variant | None:
    """The variant of `kind` for this workload; None where it does not apply (no optimizer, or
    the step is not of the form the placement starts from)."""
    optimizers = placement.optimizers_held(workload)
    if not optimizers:
        return None
    module_form = workload.compiled_module is not None
    if kind == "optimizer" and module_form:
        return _optimizer_variant(optimizers, targets)
    if kind == "step" and module_form and not placement.script_loop(workload):
        return _step_variant(targets)
    if kind == "fused" and module_form:
        return _optimizer_setting_variant(kind, optimizers, targets, fused_supported)
    if kind == "foreach" and module_form:
        return _optimizer_setting_variant(kind, optimizers, targets, foreach_only)
    if kind == "eager_fused":
        return _optimizer_setting_variant(kind, optimizers, targets, fused_supported)
    if kind == "module" and not module_form:
        return _module_variant(workload, targets)
    return None


def _optimizer_variant(optimizers: dict[str, Any], targets: list[BreakSite]) -> Variant:
    steps = tuple(
        CodeUnit(f"{name}.step", type(opt).__qualname__) for name, opt in optimizers.items()
    )
    record = replace(variant_record("optimizer", tuple(targets)), subjects=steps)

    def make_call(workload: Workload, backend: Any) -> Callable[[], Any]:
        compiled = harness.compiled_call(workload, backend, False)
        optimizer_steps = placement.CompiledOptimizers(optimizers, backend)

        def call() -> Any:
            with optimizer_steps:
                return compiled()

        return call

    return Variant(record, make_call)


def _step_variant(targets: list[BreakSite]) -> Variant:
    record = variant_record("step", tuple(targets))

    def make_call(workload: Workload, backend: Any) -> Callable[[], Any]:
        return harness.compiled_call(replace(workload, compiled_module=None), backend, False)

    return Variant(record, make_call)


def _module_variant(workload: Workload, targets: list[BreakSite]) -> Variant | None:
    roots = placement.module_roots(workload)
    if not roots:
        return None
    modules = list(roots.items())
    record = replace(
        variant_record("module", tuple(targets)), subjects=placement.region_units(modules)
    )
    return Variant(record, regions_call(modules))


def _optimizer_setting_variant(
    kind: str,
    optimizers: dict[str, Any],
    targets: list[BreakSite],
    applies: Callable[[Any], bool],
) -> Variant | None:
    """Each optimizer that `applies`, its param groups switched to the fused ("fused",
    "eager_fused") or foreach ("foreach") update while the variant runs; the model compiled as
    in the default mode, or not at all for "eager_fused"; None where no optimizer applies."""
    chosen = {name: opt for name, opt in optimizers.items() if applies(opt)}
    if not chosen:
        return None
    units = tuple(CodeUnit(name, type(opt).__qualname__) for name, opt in chosen.items())
    record = replace(variant_record(kind, tuple(targets)), subjects=units)
    update = "foreach" if kind == "foreach" else "fused"

    def make_call(workload: Workload, backend: Any) -> Callable[[], Any]:
        run = workload if kind == "eager_fused" else harness.compiled_call(workload, backend, False)
        switched = OptimizerUpdate(list(chosen.values()), update)

        def call() -> Any:
            with switched:
                return run()

        return call

    return Variant(record, make_call)


def fused_supported(optimizer: Any) -> bool:
    """Whether `optimizer`'s class takes `fused=True` for its parameters (their device and
    dtype), and it is not fused already. Asked by building a spare one of the same class with
    the same settings: the constructor checks what the step's kernel supports."""
    parameters = inspect.signature(type(optimizer)).parameters
    if "fused" not in parameters or any(g.get("fused") for g in optimizer.param_groups):
        return False
    settings = {k: v for k, v in optimizer.defaults.items() if k in parameters}
    params = [p for group in optimizer.param_groups for p in group["params"]]
    try:
        type(optimizer)(params, **{**settings, "fused": True, "foreach": None})
    except Exception:  # this device or dtype has no fused kernel for this optimizer
        return False
    return True


def foreach_only(optimizer: Any) -> bool:
    """Whether `optimizer` takes `foreach=True` and has no fused kernel for its parameters
    (where it has one, "fused" is measured: the same update in fewer passes), and it uses
    neither already."""
    parameters = inspect.signature(type(optimizer)).parameters
    if "foreach" not in parameters or fused_supported(optimizer):
        return False
    return not any(g.get("foreach") or g.get("fused") for g in optimizer.param_groups)


class OptimizerUpdate:
    """While entered, the optimizers' param groups take the fused update (`update="fused"`:
    `fused=True`, `foreach` off, as the constructor would set them) or the foreach one
    (`update="foreach"`: `foreach=True`, `fused` off where the class has it); on exit, what
    they had, keys they lacked removed again."""

    KEYS = ("fused", "foreach")

    def __init__(self, optimizers: list[Any], update: str = "fused") -> None:
        self.optimizers = optimizers
        self.fused = update == "fused"
        self.saved: list[list[dict[str, Any]]] = []

    def __enter__(self) -> OptimizerUpdate:
        self.saved = [
            [{k: g[k] for k in self.KEYS if k in g} for g in opt.param_groups]
            for opt in self.optimizers
        ]
        for opt in self.optimizers:
            for group in opt.param_groups:
                if self.fused or "fused" in group:
                    group["fused"] = self.fused
                group["foreach"] = not self.fused
        return self

    def __exit__(self, *exc: object) -> None:
        for opt, groups in zip(self.optimizers, self.saved, strict=True):
            for group, saved in zip(opt.param_groups, groups, strict=True):
                for key in self.KEYS:
                    if key in saved:
                        group[key] = saved[key]
                    else:
                        group.pop(key, None)

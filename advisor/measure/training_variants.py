"""Where torch.compile goes in a training step, as variants to measure against the default mode.

In training the time that can be won often sits outside the forward's breaks: compiling the
optimizer's step (a fused update instead of one kernel per parameter tensor) or the whole step
pays where the forward has nothing to fix. These variants are planned for every training step
(a workload that holds an optimizer), breaks or not, from the form the user compiles it in:

- the model compiled in place (`Workload(compiled_module=model)`, the step eager around it):
  "optimizer" compiles each optimizer's `step` too (`opt.step = torch.compile(opt.step)`);
  "step" compiles the whole step function instead (forward, backward and optimizer at once);
  "fused" builds each optimizer with `fused=True` where its class and the parameters' device
  and dtype have a fused kernel (one kernel for the update, no compile);
- the whole step compiled: "module" compiles only the model in place, the step (backward and
  optimizer) eager: the reverse, for a step whose compile does not pay beyond the model's
  (where the step has breaks, the regional placement measures that already).

They aim at no break: the breaks a variant compiles are in its record (`new_breaks`).

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
MODULE_FORM = ("optimizer", "step", "fused")
STEP_FORM = ("module",)


def training_step(workload: Workload) -> TrainingStep | None:
    """What the workload holds as a training step; None without an optimizer."""
    optimizers = placement.optimizers_held(workload)
    if not optimizers:
        return None
    return TrainingStep(
        optimizers=tuple(optimizers),
        module_compiled=workload.compiled_module is not None,
        modules=tuple(placement.module_roots(workload)),
    )


def planned_kinds(training: TrainingStep | None, has_breaks: bool = False) -> tuple[str, ...]:
    """The training placements to measure for a step of this form. A whole step with breaks
    gets the regional placement (the break-free modules compiled, the step eager), which is
    the model compiled in place where the model has no break: "module" would time it twice."""
    if training is None or not training.optimizers:
        return ()
    if training.module_compiled:
        return MODULE_FORM
    return () if has_breaks else STEP_FORM


def training_variant(kind: str, workload: Workload, targets: list[BreakSite]) -> Variant | None:
    """The variant of `kind` for this workload; None where it does not apply (no optimizer, or
    the step is not of the form the placement starts from)."""
    optimizers = placement.optimizers_held(workload)
    if not optimizers:
        return None
    module_form = workload.compiled_module is not None
    if kind == "optimizer" and module_form:
        return _optimizer_variant(optimizers, targets)
    if kind == "step" and module_form:
        return _step_variant(targets)
    if kind == "fused" and module_form:
        return _fused_variant(optimizers, targets)
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


def _fused_variant(optimizers: dict[str, Any], targets: list[BreakSite]) -> Variant | None:
    """Each optimizer that can be, built with `fused=True` (its param groups switched while the
    variant runs), the model compiled as in the default mode; None where none can."""
    fusable = {name: opt for name, opt in optimizers.items() if fused_supported(opt)}
    if not fusable:
        return None
    units = tuple(CodeUnit(name, type(opt).__qualname__) for name, opt in fusable.items())
    record = replace(variant_record("fused", tuple(targets)), subjects=units)

    def make_call(workload: Workload, backend: Any) -> Callable[[], Any]:
        compiled = harness.compiled_call(workload, backend, False)
        fused = FusedOptimizers(list(fusable.values()))

        def call() -> Any:
            with fused:
                return compiled()

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


class FusedOptimizers:
    """While entered, the optimizers' param groups take the fused update (`fused=True`,
    `foreach` off, as the constructor would set them); on exit, what they had."""

    def __init__(self, optimizers: list[Any]) -> None:
        self.optimizers = optimizers
        self.saved: list[list[tuple[Any, Any]]] = []

    def __enter__(self) -> FusedOptimizers:
        self.saved = [
            [(g.get("fused"), g.get("foreach")) for g in opt.param_groups]
            for opt in self.optimizers
        ]
        for opt in self.optimizers:
            for group in opt.param_groups:
                group["fused"], group["foreach"] = True, False
        return self

    def __exit__(self, *exc: object) -> None:
        for opt, groups in zip(self.optimizers, self.saved, strict=True):
            for group, (fused, foreach) in zip(opt.param_groups, groups, strict=True):
                group["fused"], group["foreach"] = fused, foreach

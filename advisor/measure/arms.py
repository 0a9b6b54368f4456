"""The arms of the replicated protocol and how a worker builds one.

An arm is one way of running the workload that is compared with the others: a mode (eager,
default, fullgraph), a what-if from the capture's plan (a knob, a no-op, a placement), or the
default mode with guard evaluation skipped. A worker process builds exactly one arm (compiles
it, runs its first call, warms it, checks its output against eager's and calibrates its block
size), then times blocks of it when the parent says so (`advisor.measure.arm_worker`). Nothing
else is compiled in that process: a second compile of the same code object does not behave
like a first one (shared/torch-facts.md sections 11-12).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from advisor.core.errors import AdvisorError, first_line
from advisor.core.model import BreakSite, ModeError, ModeResult, Note, Settings, WhatIf
from advisor.measure import harness, metronome, torch_adapter
from advisor.measure.stages import WhatIfPlan, variant_for
from advisor.measure.timing import timer_for
from advisor.measure.torch_adapter import compare_outputs
from advisor.measure.whatif import (
    GUARD_SKIP_KNOB,
    GUARD_SKIP_SETTING,
    failed_variant,
    prepare_variant,
    stdout_of,
)
from advisor.measure.workload import Workload

GUARDS_LABEL = "guards"


@dataclass(frozen=True)
class Arm:
    """One compared arm: `kind` "mode" (with `mode`), "what_if" (with `plan`), "guards", or
    "metronome" (the machine-speed reference, `advisor.measure.metronome`: not the target)."""

    label: str
    kind: str
    mode: str = ""
    plan: WhatIfPlan | None = None


def mode_arm(mode: str) -> Arm:
    return Arm(mode, "mode", mode=mode)


def what_if_arm(plan: WhatIfPlan) -> Arm:
    return Arm(f"what-if {plan.label}", "what_if", plan=plan)


GUARDS_ARM = Arm(GUARDS_LABEL, "guards")
METRONOME_ARM = Arm(metronome.LABEL, "metronome")


def is_metronome(arm: Arm) -> bool:
    """Whether the arm is the machine-speed reference rather than one of the target's."""
    return arm.kind == METRONOME_ARM.kind


@dataclass(frozen=True)
class ArmTask:
    """What one worker builds: the arm, the target and how to measure it."""

    arm: Arm
    target: str
    params_json: str
    device: str
    settings: Settings
    sites: tuple[BreakSite, ...] = ()  # every site of the default mode (what-ifs compare)
    number: int | None = None  # calls per block (set after the first wave calibrated it)
    memory: bool = True  # measure peak memory (the first wave's processes only)
    # a training step: the arm starts from the model as built (no eager calls before it) and
    # reports its first steps' outputs, which the parent compares with eager's
    training: bool = False


@dataclass(frozen=True)
class Built:
    """What a worker reports once its arm is warm (or why it is not: `mode`'s or `what_if`'s
    status says failed, `error` holds bad input in one line)."""

    name: str = ""
    mode: ModeResult | None = None
    what_if: WhatIf | None = None
    number: int = 1
    first_call_s: float | None = None
    stdout_chars: int | None = None  # per call
    notes: tuple[Note, ...] = ()
    error: str | None = None
    metronome: bool = False  # the machine-speed reference, not an arm of the target
    # a training step's first two outputs from the model as built (`ArmTask.training`)
    first_steps: tuple[tuple[torch_adapter.LeafPrint, ...], ...] = ()

    @property
    def ready(self) -> bool:
        if self.error:
            return False
        if self.metronome:
            return True
        if self.mode is not None:
            return self.mode.status == "ok"
        return self.what_if is not None and self.what_if.status == "measured"


@dataclass
class Live:
    """A built arm in its worker: the call to time and how to see a recompile."""

    built: Built
    call: Callable[[], Any] | None
    backend: torch_adapter.InductorBackend | None = None

    def compiles(self) -> int:
        return len(self.backend.compile_ids) if self.backend is not None else 0


def build(task: ArmTask, workload: Workload) -> Live:
    """Build the task's arm on `workload` (in a fresh worker process)."""
    arm = task.arm
    if arm.kind == "mode":
        return _mode(task, workload)
    if arm.kind == "guards":
        return _guards(task, workload)
    if arm.kind == "what_if" and arm.plan is not None:
        return _what_if(task, workload, arm.plan)
    raise AdvisorError(f"unknown arm '{arm.label}'")


def _mode(task: ArmTask, workload: Workload) -> Live:
    run, _, notes = harness.prepare_mode(
        workload, task.settings, task.device, task.arm.mode, training=task.training
    )
    result = run.result
    if run.call is None or result.status != "ok":
        return Live(Built(workload.name, mode=result, notes=tuple(notes)), None)
    peak, method = harness.peak_memory(run.call, task.device) if task.memory else (None, "")
    recompiles = harness.count_recompiles(run.backend) if run.backend is not None else 0
    result = replace(result, peak_memory_bytes=peak, memory_method=method, recompiles=recompiles)
    number = task.number or calibrate(run.call, task.settings, task.device)
    built = Built(workload.name, mode=result, number=number, first_call_s=result.first_call_s)
    built = replace(built, notes=tuple(notes), first_steps=_prints(run.first_outputs))
    built = replace(built, stdout_chars=len(stdout_of(run.call)[1]))
    return Live(built, run.call, run.backend)


def _prints(outputs: tuple[Any, ...]) -> tuple[tuple[torch_adapter.LeafPrint, ...], ...]:
    return tuple(torch_adapter.output_fingerprint(o) for o in outputs)


def _what_if(task: ArmTask, workload: Workload, plan: WhatIfPlan) -> Live:
    notes: list[Note] = []
    training = task.training  # a training step's variant starts from the model as built
    reference = harness.NO_REFERENCE if training else harness.eager_reference(workload, notes)
    variant = variant_for(workload, plan, task.sites)
    if variant is None:
        return Live(Built(workload.name, what_if=plan.skipped(), notes=tuple(notes)), None)
    started = time.perf_counter()
    try:
        prepared = prepare_variant(
            workload,
            variant,
            list(plan.targets),
            reference,
            task.settings,
            task.device,
            task.sites,
            keep_first=training,
        )
    except Exception as exc:  # a variant that breaks compilation is this what-if's finding
        return Live(Built(workload.name, what_if=failed_variant(variant, exc)), None)
    first = time.perf_counter() - started
    number = task.number or calibrate(prepared.call, task.settings, task.device)
    built = Built(workload.name, what_if=prepared.record, number=number, first_call_s=first)
    built = replace(built, stdout_chars=prepared.stdout_chars, notes=tuple(notes))
    built = replace(built, first_steps=_prints(prepared.first_outputs))
    return Live(built, prepared.call, prepared.backend)


def build_metronome(task: ArmTask) -> Live:
    """The fixed reference workload, eager, warmed and calibrated like an arm (the worker calls
    this instead of `build`: the target is not loaded for it)."""
    reference = metronome.workload()
    for _ in range(WARM_CALLS):
        reference()
    number = task.number or calibrate(reference, task.settings, metronome.DEVICE)
    return Live(Built(metronome.LABEL, number=number, metronome=True), reference)


WARM_CALLS = 20


def _guards(task: ArmTask, workload: Workload) -> Live:
    """The default mode compiled as usual, timed with guard evaluation skipped."""
    base = WhatIf(GUARD_SKIP_KNOB, GUARD_SKIP_SETTING, "guards", "measured", kind="guards")
    stances = torch_adapter.guard_skipping_stances()
    if stances is None:
        skipped = replace(base, status="skipped", error="this torch cannot skip guards")
        return Live(Built(workload.name, what_if=skipped), None)
    run, reference, notes = harness.prepare_mode(
        workload, task.settings, task.device, "default", training=task.training
    )
    if run.call is None:
        error = run.result.error or ModeError("Error", "the default mode did not compile")
        failed = replace(base, status="failed", error=f"{error.type}: {error.message}")
        return Live(Built(workload.name, what_if=failed, notes=tuple(notes)), None)
    compiled, skipping = run.call, stances[1]

    def call() -> Any:
        with skipping():
            return compiled()

    try:
        output = call()
    except Exception as exc:  # a stance this code cannot run under is a finding
        failed = replace(base, status="failed", error=f"{type(exc).__name__}: {first_line(exc)}")
        return Live(Built(workload.name, what_if=failed, notes=tuple(notes)), None)
    check = None if reference is harness.NO_REFERENCE else compare_outputs(reference, output)
    record = replace(base, matches_eager=check.matches if check else None, output=check)
    number = task.number or calibrate(call, task.settings, task.device)
    built = Built(workload.name, what_if=record, number=number, notes=tuple(notes))
    return Live(replace(built, first_steps=_prints(run.first_outputs)), call, run.backend)


def calibrate(call: Callable[[], Any], settings: Settings, device: str) -> int:
    """Calls per block: enough that a block lasts `min_block_s` (as the quick protocol)."""
    timer = timer_for(device)
    single = max(timer.time_block(call, 1), 1e-7)
    return max(1, min(10_000, math.ceil(settings.min_block_s / single - 1e-6)))

"""One isolated measurement: `python -m advisor.measure.isolated_worker TASK RESULT FAULTS`.

Started by `advisor.measure.isolate` in a process group of its own. It builds the workload, measures
the one thing the task names (a mode, or a what-if), and writes a `TaskResult`. Bad input is a
result with `error` (one line); anything else ends the process, and the parent reports how.
faulthandler writes the Python stack to FAULTS on a fatal signal, and on SIGUSR1 (sent when the
task ran out of time), so the parent can say where the process was.
"""

from __future__ import annotations

import dataclasses
import faulthandler
import json
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from advisor.core.errors import AdvisorError
from advisor.core.files import replace_atomically
from advisor.core.model import ModeResult, Note
from advisor.core.serial import message_from_json, message_to_json
from advisor.measure import environment, harness
from advisor.measure.capture import CaptureSession
from advisor.measure.cpus import pinned
from advisor.measure.isolate import Task, TaskResult
from advisor.measure.library_option import with_library_options
from advisor.measure.quiet import muted_dynamo_warnings
from advisor.measure.stages import measure_what_if, warm_default_stage
from advisor.measure.training_variants import training_step
from advisor.measure.workload import Workload, load_target


def main(argv: Sequence[str] | None = None) -> int:
    request, result, faults = (Path(a) for a in (sys.argv[1:] if argv is None else argv))
    # kept open for the life of the process: faulthandler writes to its descriptor
    stack_file = open(faults, "w")
    faulthandler.enable(stack_file, all_threads=False)
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, stack_file, all_threads=False)
    task = message_from_json(Task, request.read_text(encoding="utf-8"))
    try:
        with muted_dynamo_warnings():
            outcome = measure_task(task)
    except AdvisorError as exc:
        outcome = TaskResult(error=str(exc))
    replace_atomically(result, message_to_json(outcome))  # the parent sees a whole result or none
    return 0


def measure_task(task: Task) -> TaskResult:
    # One thread setting for the whole task, as the in-process run holds it: Dynamo guards on
    # the thread count, so a profile or what-if run after the harness restored it would
    # recompile every frame. The environment is read once pinned, before measuring.
    with pinned(task.settings.threads):
        env = environment.describe(task.device)
        result = _measure_task(task)
    return dataclasses.replace(result, environment=env)


def _measure_task(task: Task) -> TaskResult:
    workload = load_target(task.target, task.device, json.loads(task.params_json))
    if task.kind == "what_if":
        return _what_if(task, workload)
    if task.kind == "default":
        return _default(task, workload)
    if task.kind not in ("eager", "fullgraph"):
        raise AdvisorError(f"unknown isolated task '{task.kind}'")
    compiled = () if task.kind == "eager" else (task.kind,)
    options = harness.HarnessOptions(modes=("eager", *compiled), timed=(task.kind,))
    run = harness.measure(workload, task.settings, task.device, options=options)
    return TaskResult(workload.name, _result(run, task.kind), notes=tuple(run.notes))


def _default(task: Task, workload: Workload) -> TaskResult:
    """The default mode with its capture, then the warm stage, as the in-process run takes
    them (`advisor.measure.stages`)."""
    session = CaptureSession()
    options = harness.HarnessOptions(
        modes=("eager", "default"), timed=("default",), observers={"default": lambda: session}
    )
    run = harness.measure(workload, task.settings, task.device, options=options)
    capture = dataclasses.replace(session.result(), training=training_step(workload))
    capture = dataclasses.replace(capture, sites=with_library_options(capture.sites, workload))
    notes = [*run.notes, *capture.notes]
    trace = guards = None
    if "default" in run.calls:
        warm = warm_default_stage(
            run.calls["default"], run.reference_output, task.settings, task.device, notes
        )
        trace, guards = warm.trace, warm.guards
    mode = _result(run, "default")
    return TaskResult(workload.name, mode, capture, trace, guards, notes=tuple(notes))


def _what_if(task: Task, workload: Workload) -> TaskResult:
    plan = task.plan
    if plan is None:
        raise AdvisorError("a what-if task names nothing to measure")
    notes: list[Note] = []
    reference = harness.eager_reference(workload, notes)
    what_if = measure_what_if(workload, plan, reference, task.settings, task.device, task.sites)
    return TaskResult(workload.name, what_if=what_if, notes=tuple(notes))


def _result(run: harness.HarnessRun, mode: str) -> ModeResult:
    return next(m for m in run.modes if m.mode == mode)


if __name__ == "__main__":
    sys.exit(main())

"""One isolated measurement: `python -m advisor.isolated_worker TASK RESULT FAULTS`.

Started by `advisor.isolate` in a process group of its own. It builds the workload, measures
the one thing the task names (a mode, or a what-if), and writes a `TaskResult`. Bad input is a
result with `error` (one line); anything else ends the process, and the parent reports how.
faulthandler writes the Python stack to FAULTS on a fatal signal, and on SIGUSR1 (sent when the
task ran out of time), so the parent can say where the process was.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from advisor import harness, pipeline
from advisor.capture import CaptureSession
from advisor.errors import AdvisorError
from advisor.isolate import Task, TaskResult, result_to_json, task_from_json
from advisor.model import ModeResult
from advisor.quiet import muted_dynamo_warnings
from advisor.whatif import measure_guard_skip, measure_knob
from advisor.workload import Workload, load_target


def main(argv: Sequence[str] | None = None) -> int:
    request, result, faults = (Path(a) for a in (sys.argv[1:] if argv is None else argv))
    # kept open for the life of the process: faulthandler writes to its descriptor
    stack_file = open(faults, "w")
    faulthandler.enable(stack_file, all_threads=False)
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, stack_file, all_threads=False)
    task = task_from_json(request.read_text(encoding="utf-8"))
    try:
        with muted_dynamo_warnings():
            outcome = measure_task(task)
    except AdvisorError as exc:
        outcome = TaskResult(error=str(exc))
    temp = result.with_name(result.name + ".tmp")
    temp.write_text(result_to_json(outcome), encoding="utf-8")
    os.replace(temp, result)  # the parent sees a whole result or none
    return 0


def measure_task(task: Task) -> TaskResult:
    # One thread setting for the whole task, as `pipeline.measure` holds it in-process: Dynamo
    # guards on the thread count, so a profile or what-if run after the harness restored it
    # would recompile every frame.
    with harness.pinned(task.settings.threads):
        return _measure_task(task)


def _measure_task(task: Task) -> TaskResult:
    workload = load_target(task.target, task.device, json.loads(task.params_json))
    if task.kind == "what_if":
        return _what_if(task, workload)
    if task.kind == "default":
        return _default(task, workload)
    if task.kind not in ("eager", "fullgraph"):
        raise AdvisorError(f"unknown isolated task '{task.kind}'")
    compiled = () if task.kind == "eager" else (task.kind,)
    run = harness.measure(workload, task.settings, task.device, modes=compiled, timed=(task.kind,))
    return TaskResult(workload.name, _result(run, task.kind), warnings=tuple(run.warnings))


def _default(task: Task, workload: Workload) -> TaskResult:
    """The default mode with its capture and profile, as `pipeline.measure` takes them."""
    session = CaptureSession()
    run = harness.measure(
        workload,
        task.settings,
        task.device,
        modes=("default",),
        observers={"default": lambda: session},
        timed=("default",),
    )
    capture = session.result()
    warnings = [*run.warnings, *capture.warnings]
    trace = guards = None
    if "default" in run.calls:
        trace = pipeline.profile_default(run.calls["default"], task.settings, task.device, warnings)
        if task.settings.what_if:
            guards = measure_guard_skip(
                run.calls["default"], run.reference_output, task.settings, task.device
            )
    mode = _result(run, "default")
    return TaskResult(workload.name, mode, capture, trace, guards, warnings=tuple(warnings))


def _what_if(task: Task, workload: Workload) -> TaskResult:
    if task.knob is None:
        raise AdvisorError("a what-if task names no knob")
    warnings: list[str] = []
    reference = harness.eager_reference(workload, warnings)
    what_if = measure_knob(
        workload,
        task.knob,
        list(task.targets),
        reference,
        task.settings,
        task.device,
        baseline_sites=task.sites,
    )
    return TaskResult(workload.name, what_if=what_if, warnings=tuple(warnings))


def _result(run: harness.HarnessRun, mode: str) -> ModeResult:
    return next(m for m in run.modes if m.mode == mode)


if __name__ == "__main__":
    sys.exit(main())

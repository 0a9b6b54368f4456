"""`advisor run --isolate`: each mode, and each what-if, measured in a process of its own.

A compile that hangs, a backend that segfaults or a workload that exhausts memory then costs one
mode, not the run: the process is given `--timeout` seconds, its process group is killed when
they are up, and what happened becomes that mode's finding (`status="failed"`, error type
`Timeout` or `Crash`, with the frame it was in where Python could say). The other modes are
reported as usual, and the judging happens here, in the parent, as for an in-process run.

What it costs: processes cannot be timed interleaved, so drift of the machine between modes is
no longer cancelled; and each process pays the torch import and Inductor's warm-up again (see
the README for the measured wall time).

A process gets a `Task` as JSON and writes a `TaskResult` as JSON
(`advisor.measure.isolated_worker`).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from advisor.core.artifacts import Capture, Measurements, ProfileTrace, WorkerEnvironment
from advisor.core.errors import AdvisorError
from advisor.core.model import (
    BreakSite,
    Environment,
    ModeError,
    ModeResult,
    Note,
    Settings,
    WhatIf,
)
from advisor.core.paths import is_installed
from advisor.core.processes import run_process
from advisor.core.serial import message_from_json, message_to_json
from advisor.measure import environment
from advisor.measure.harness import MODE_ORDER
from advisor.measure.pipeline import (
    MeasureInterrupted,
    Progress,
    RunOptions,
    fitted,
    workload_info,
)
from advisor.measure.stages import WhatIfPlan, what_if_plan
from advisor.measure.workload import check_target

STACK_DUMP_WAIT_S = 1.0  # after asking a timed-out process for its stack, before the kill
_FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+) in (?P<function>.+?)\s*$')


@dataclass(frozen=True)
class Task:
    """What one isolated process measures."""

    kind: str  # "eager" | "fullgraph" | "default" | "what_if"
    target: str
    params_json: str  # the factory's keyword arguments, a JSON object
    device: str
    settings: Settings
    plan: WhatIfPlan | None = None  # kind "what_if": what to measure
    sites: tuple[BreakSite, ...] = ()  # kind "what_if": every site of the default mode

    @property
    def label(self) -> str:
        return self.kind if self.plan is None else f"{self.kind} {self.plan.label}"


@dataclass(frozen=True)
class TaskResult:
    """What it measured, or the one-line error of bad input (`error`)."""

    name: str = ""  # the workload's name
    mode: ModeResult | None = None
    capture: Capture | None = None
    trace: ProfileTrace | None = None
    what_if: WhatIf | None = None
    notes: tuple[Note, ...] = ()
    environment: Environment | None = None  # where the process measured, read as it began
    error: str | None = None


Command = Callable[[Path, Path, Path], list[str]]


def worker_command(request: Path, result: Path, faults: Path) -> list[str]:
    """The worker reads `request`, writes `result`, and its Python stack to `faults` on a fatal
    signal or when asked (SIGUSR1)."""
    return [
        sys.executable,
        "-m",
        "advisor.measure.isolated_worker",
        str(request),
        str(result),
        str(faults),
    ]


# --- one process ------------------------------------------------------------------------------


def run_task(
    task: Task, timeout_s: float | None, command: Command = worker_command
) -> TaskResult | ModeError:
    """Run `task` in a new process (group) and return its result, or why it has none: a
    `ModeError` of type Timeout (killed after `timeout_s`) or Crash (a signal, or an exit
    without a result). Ctrl-C kills the process group and propagates."""
    with tempfile.TemporaryDirectory(prefix="advisor-isolated-") as folder:
        paths = [Path(folder) / name for name in ("task", "result", "faults", "stderr")]
        request, result, faults, stderr_path = paths
        request.write_text(message_to_json(task), encoding="utf-8")
        with open(stderr_path, "wb") as stderr:
            outcome = run_process(
                command(request, result, faults),
                timeout_s,
                stderr=stderr,
                env=child_environment(),
                before_kill=_ask_for_stack,
            )
        if outcome.launch_error:
            raise AdvisorError(f"cannot start an isolated process: {outcome.launch_error}")
        # what the workload (a script's banner, its logging) printed stays out of the
        # advisor's terminal: its last line says why a process that failed ended
        stderr_text = stderr_path.read_text(encoding="utf-8", errors="replace")
        stack = faults.read_text(encoding="utf-8", errors="replace") if faults.is_file() else ""
        if outcome.timed_out:
            return timeout_error(timeout_s or 0.0, stack)
        if outcome.signal is not None:
            return crash_error(f"was killed by {outcome.signal}", stack)
        if outcome.returncode != 0 or not result.is_file():
            last = last_line(stderr_text)
            code = outcome.returncode
            return crash_error(f"exited with code {code}" + (f": {last}" if last else ""), "")
        try:
            return message_from_json(TaskResult, result.read_text(encoding="utf-8"))
        except ValueError as exc:  # JSONDecodeError included
            return crash_error(f"wrote a result that cannot be read ({exc})", "")


def child_environment() -> dict[str, str]:
    """This process's environment, with its import path: the worker imports the target's
    modules as this process did."""
    env = dict(os.environ)
    paths = [p for p in sys.path if p]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def _ask_for_stack(proc: subprocess.Popen[bytes]) -> None:
    """SIGUSR1 makes the worker's faulthandler write its Python stack to stderr."""
    if not hasattr(signal, "SIGUSR1"):
        return
    try:
        os.kill(proc.pid, signal.SIGUSR1)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=STACK_DUMP_WAIT_S)
    except subprocess.TimeoutExpired:
        pass


def last_line(text: str) -> str:
    """The last line of `text` that is not blank, stripped ("" for none)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def last_line_of(path: Path) -> str:
    """`last_line` of a file a process wrote its output to ("" where there is none)."""
    return last_line(path.read_text("utf-8", errors="replace")) if path.is_file() else ""


def timeout_error(timeout_s: float, stack: str) -> ModeError:
    return _with_frame(
        ModeError("Timeout", f"timed out after {timeout_s:g} s (process group killed)"), stack
    )


def crash_error(what: str, stack: str) -> ModeError:
    return _with_frame(ModeError("Crash", f"the process {what}"), stack)


def _with_frame(error: ModeError, stack: str) -> ModeError:
    """Add where the process was, from its faulthandler dump: the innermost frame of the
    user's code if any, else the innermost frame."""
    frames = dumped_frames(stack)
    if not frames:
        return error
    mine = [f for f in frames if not is_installed(f[0])]
    file, line, function = (mine or frames)[0]
    return replace(error, message=f"{error.message}; it was in {function}", file=file, line=line)


def dumped_frames(stack: str) -> list[tuple[str, int, str]]:
    """(file, line, function) of the last faulthandler dump in `stack`, innermost first."""
    lines = stack.splitlines()
    starts = [i for i, line in enumerate(lines) if "most recent call first" in line]
    if not starts:
        return []
    frames = []
    for line in lines[starts[-1] + 1 :]:
        match = _FRAME.match(line)
        if match is None:
            break
        frames.append((match["file"], int(match["line"]), match["function"]))
    return frames


# --- a whole run ------------------------------------------------------------------------------


@dataclass
class IsolatedRun:
    """Runs the tasks of one target one after the other, in the order of the in-process run's
    stages (`advisor.measure.stages`), and collects what they measured."""

    options: RunOptions
    device: str
    progress: Progress
    command: Command = worker_command
    name: str = ""
    modes: list[ModeResult] = field(default_factory=list)
    capture: Capture = field(default_factory=Capture)
    trace: ProfileTrace | None = None
    what_ifs: list[WhatIf] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    workers: list[WorkerEnvironment] = field(default_factory=list)
    created_at: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    started: float = field(default_factory=time.perf_counter)

    def __post_init__(self) -> None:
        self.params_json = params_json(self.options.params)

    def task(self, kind: str, **extra: Any) -> Task:
        options = self.options
        return Task(kind, options.target, self.params_json, self.device, options.settings, **extra)

    def run(self, task: Task, label: str) -> TaskResult | ModeError:
        timeout = self.options.settings.timeout_s
        limit = f", timeout {timeout:g} s" if timeout else ""
        self.progress(f"isolated: {label} in its own process{limit}...")
        outcome = run_task(task, timeout, self.command)
        if isinstance(outcome, TaskResult):
            self.name = self.name or outcome.name
            # every process measures eager's reference again: say each thing once
            self.notes += [n for n in outcome.notes if n not in self.notes]
            if outcome.environment is not None:
                self.workers.append(WorkerEnvironment(task.label, outcome.environment))
        return outcome

    def measure(self) -> None:
        if not self.measure_eager():
            for mode in ("default", "fullgraph"):
                if mode in self.options.modes:
                    self.add_mode(_skipped(mode))
            return
        for mode in ("fullgraph", "default"):
            if mode in self.options.modes:
                self.measure_compiled(mode)
        if self.options.settings.what_if:
            self.measure_what_ifs()

    def add_mode(self, result: ModeResult) -> None:
        """Keep the modes in the order an in-process run reports them."""
        self.modes.append(result)
        self.modes.sort(key=lambda m: MODE_ORDER.index(m.mode) if m.mode in MODE_ORDER else 99)

    def measure_eager(self) -> bool:
        """Eager first; bad input there stops the run as it would in-process."""
        outcome = self.run(self.task("eager"), "eager")
        if isinstance(outcome, TaskResult) and outcome.error:
            raise AdvisorError(outcome.error)
        self.add_mode(_mode_result("eager", outcome))
        return isinstance(outcome, TaskResult)

    def measure_compiled(self, mode: str) -> None:
        outcome = self.run(self.task(mode), f"the {mode} mode")
        self.add_mode(_mode_result(mode, outcome))
        if mode == "default" and isinstance(outcome, TaskResult):
            self.capture = outcome.capture or Capture()
            self.trace = outcome.trace
            if outcome.what_if is not None:  # guard evaluation, measured while warm
                self.what_ifs.append(outcome.what_if)

    def measure_what_ifs(self) -> None:
        default = next((m for m in self.modes if m.mode == "default"), None)
        if default is None or default.status != "ok" or self.trace is None:
            return
        sites = self.capture.sites
        for plan in what_if_plan(sites, training=self.capture.training):
            task = self.task("what_if", plan=plan, sites=sites)
            outcome = self.run(task, f"what-if {plan.label}")
            self.what_ifs.append(_what_if_result(plan, outcome))

    def measurements(self, incomplete: bool = False) -> Measurements:
        """The record; its environment is the default-mode worker's (the one that profiled),
        else the first worker's: the parent only waited."""
        envs = {w.task: w.environment for w in self.workers}
        env = envs.get("default") or (self.workers[0].environment if self.workers else None)
        return Measurements(
            workload=workload_info(self.name or self.options.target, self.options, self.device),
            environment=env or environment.unknown(),
            settings=self.options.settings,
            modes=tuple(self.modes),
            capture=self.capture,
            trace=self.trace,
            what_ifs=tuple(self.what_ifs),
            notes=tuple(self.notes),
            workers=tuple(self.workers),
            incomplete=incomplete,
            created_at=self.created_at,
            wall_s=time.perf_counter() - self.started,
        )


def _mode_result(mode: str, outcome: TaskResult | ModeError) -> ModeResult:
    if isinstance(outcome, ModeError):
        return ModeResult(mode, "failed", error=outcome)
    if outcome.error or outcome.mode is None:
        return ModeResult(
            mode, "failed", error=ModeError("Error", outcome.error or "no result for this mode")
        )
    return outcome.mode


def _skipped(mode: str) -> ModeResult:
    return ModeResult(mode, "skipped", error=ModeError("Skipped", "not run: eager failed"))


def _what_if_result(plan: WhatIfPlan, outcome: TaskResult | ModeError) -> WhatIf:
    if isinstance(outcome, TaskResult) and outcome.what_if is not None:
        return outcome.what_if
    if isinstance(outcome, ModeError):
        return plan.failed(f"{outcome.type}: {outcome.message}")
    return plan.failed(outcome.error or "no result")


def params_json(params: tuple[tuple[str, Any], ...]) -> str:
    """The factory's keyword arguments as JSON, for the worker; they must be JSON values."""
    try:
        return json.dumps(dict(params))
    except (TypeError, ValueError) as exc:
        raise AdvisorError(
            f"--isolate passes factory parameters as JSON, and these are not: {exc}"
        ) from None


def measure_isolated(
    options: RunOptions, device: str, progress: Progress, command: Command = worker_command
) -> Measurements:
    """Measure every mode and what-if in its own process. Ctrl-C raises `MeasureInterrupted`
    with what was measured so far."""
    check_target(options.target, options.params)  # bad targets fail here, not in a worker
    options, notes = fitted(options)
    run = IsolatedRun(options, device, progress, command)
    run.notes += notes
    try:
        run.measure()
    except KeyboardInterrupt:
        raise MeasureInterrupted(run.measurements(incomplete=True)) from None
    return run.measurements()

"""A script target in a measuring process (an arm worker, the profile process, a quick run):
the script runs as `__main__` in a greenlet of this thread and pauses at each call of the
callable being measured; the harness gets an ordinary `Workload` and never knows.

- unit "call": the script runs (eagerly) up to the `at_call`-th call; that call's arguments
  are the workload's, the callable itself its function. The script stays paused for good.
- unit "iteration": the workload's function resumes the script for one iteration, from one call
  of the callable to the next (the call, backward, the optimizer, the loop's own code), with
  the callable as its `compiled_module`: each arm compiles it in place and routes its calls.

A greenlet rather than a thread: the script and the harness share the thread's state (grad
mode, `inference_mode`, autocast, the profiler, Dynamo's frame hook), so a call replayed from
the harness runs as it ran in the script, and a profile of the harness sees the script's ops.
Compiles the script makes of other callables are its own (default mode, its arguments), in
every arm alike; the advisor's own compiles go to the real `torch.compile`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import greenlet

from advisor.core.errors import AdvisorError, first_line
from advisor.core.script import ScriptSpec, callable_key
from advisor.measure import torch_adapter
from advisor.measure.script_exec import CompileSites, ScriptEnd, run_script
from advisor.measure.torch_adapter.intercept import (
    CompileRequest,
    Interceptor,
    RoutedCall,
    compile_request_call,
    intercepted,
    unroute_module,
)
from advisor.measure.workload_def import Workload

_ALIVE: list[ScriptRunner] = []  # paused scripts stay referenced: never unwound mid-run
# Calls of the measured callable after which optimizer steps are no longer recorded, stepped or
# not (a loop that accumulates gradients steps every few iterations).
STEP_HOOK_CALLS = 8


@dataclass(frozen=True)
class _Call:
    routed: RoutedCall
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class _Failed:
    """An arm's compiled call raised: the harness gets the error, the script never sees it."""

    error: Exception


class _Paused(RoutedCall):
    """The measured callable: each call from the script first hands control to the harness.
    A compiled arm that raises (a fullgraph that cannot trace) hands its error to the harness
    and waits in the same call, which runs again on the next resume, as the arm then routes
    it: one failing arm does not end the script for the others (the quick protocol)."""

    def __init__(self, eager: Any, runner: ScriptRunner) -> None:
        super().__init__(eager)
        self.runner = runner

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        runner = self.runner
        if greenlet.getcurrent() is not runner.script:
            return super().__call__(*args, **kwargs)
        runner.called()
        runner.pause(_Call(self, args, kwargs))
        while True:
            route = self.route
            try:
                output = (route or self.eager)(*args, **kwargs)
                break
            except Exception as exc:
                if route is None:
                    raise  # the script's own (eager) failure is the script's
                runner.pause(_Failed(exc))
        runner.last_output = output
        return output


class ScriptRunner:
    """The script in its greenlet; `resume` runs it to its next measured call (or its end)."""

    def __init__(self, spec: ScriptSpec) -> None:
        self.spec = spec
        self.script = greenlet.greenlet(self._main)
        self.interceptor: Interceptor | None = None
        self.calls = 0  # calls of the measured callable so far
        self.target: Any = None  # the measured module or function
        self.last_output: Any = None
        self.end: ScriptEnd | None = None
        self.stepped: list[Any] = []  # the torch optimizers the script has stepped, in order
        self._unhook: Callable[[], None] | None = None
        self._sites = CompileSites(spec.path)
        _ALIVE.append(self)

    def _main(self) -> ScriptEnd:
        in_script = lambda: greenlet.getcurrent() is self.script  # noqa: E731
        # only a loop timed by iteration is a training step whose optimizers are planned; a
        # script paused for good at one call must leave no hook behind in this process
        if self.spec.unit == "iteration":
            self._unhook = torch_adapter.record_optimizer_steps(self._stepped)
        try:
            with intercepted(self._handle, in_script) as interceptor:
                self.interceptor = interceptor
                self.end = run_script(self.spec)
                return self.end
        finally:
            self.unhook()

    def unhook(self) -> None:
        """Stop recording optimizer steps (the hook would be traced into every compiled
        optimizer step an arm measures)."""
        if self._unhook is not None:
            self._unhook()
            self._unhook = None

    def called(self) -> None:
        """The measured callable was called again: a loop iteration has passed. The loop has
        stepped its optimizers by then (or, with gradient accumulation, within a few)."""
        self.calls += 1
        if self.calls > STEP_HOOK_CALLS or (self.calls > 1 and self.stepped):
            self.unhook()

    def _stepped(self, optimizer: Any) -> None:
        if all(optimizer is not seen for seen in self.stepped):
            self.stepped.append(optimizer)

    def optimizers(self) -> dict[str, Any]:
        """The optimizers the script's loop steps, by the name that holds them: those its
        frames hold while paused (plain, or one wrapper deep), then any other it has stepped
        (held deeper, as Lightning's strategy holds them)."""
        frame = self.script.gr_frame if not self.script.dead else None
        found = torch_adapter.optimizers_in_frames(frame)
        for i, optimizer in enumerate(self.stepped):
            if all(optimizer is not seen for seen in found.values()):
                found[f"stepped[{i}] ({type(optimizer).__name__})"] = optimizer
        return found

    def _handle(self, req: CompileRequest) -> RoutedCall:
        if callable_key(*self._sites.place(req)) == self.spec.key:
            self.target = req.target
            return _Paused(req.eager_call(), self)
        routed = RoutedCall(req.eager_call())
        assert self.interceptor is not None
        routed.route = compile_request_call(self.interceptor, req)  # the script's own compile
        return routed

    def pause(self, call: _Call) -> None:
        parent = self.script.parent
        assert parent is not None
        parent.switch(call)

    def resume(self) -> _Call | _Failed | ScriptEnd:
        if self.script.dead:
            return self.end or ScriptEnd(1)
        return self.script.switch()  # type: ignore[no-any-return]


def load_script(spec: ScriptSpec, device: str) -> Workload:
    """The script's measured callable as a Workload (see the module's doc)."""
    runner = ScriptRunner(spec)
    wanted = spec.at_call if spec.unit == "call" else 1
    with _process_names_kept():  # the script's argv and __main__ are its own, not the advisor's
        event = runner.resume()
        while isinstance(event, _Call) and runner.calls < wanted:
            event = runner.resume()
    if not isinstance(event, _Call):
        raise AdvisorError(_ended_early(spec, event, runner.calls, wanted))
    name = f"{Path(spec.path).stem}.{_name(runner.target)}"
    module = runner.target if torch_adapter.is_module(runner.target) else None
    if spec.unit == "call":
        if module is not None:
            unroute_module(module)  # a plain module again: the harness compiles it as a factory's
            return Workload(module, event.args, event.kwargs, name)
        return Workload(event.routed.eager, event.args, event.kwargs, name)
    return Workload(_Iteration(runner), (), {}, name, compiled_module=module or event.routed)


class _Iteration:
    """One iteration of the script's loop: resume it until its next measured call."""

    def __init__(self, runner: ScriptRunner) -> None:
        self.runner = runner
        self.__name__ = self.__qualname__ = f"{Path(runner.spec.path).stem} loop iteration"

    def optimizers_stepped(self) -> dict[str, Any]:
        """The optimizers the loop steps (`placement.optimizers_held` asks a script's loop
        here: its optimizers are in the script's frames, not in this object)."""
        return self.runner.optimizers()

    def __call__(self) -> Any:
        runner = self.runner
        event = runner.resume()
        if isinstance(event, _Failed):
            raise event.error  # the arm's own failure (a compile error is a finding)
        if not isinstance(event, _Call):
            raise AdvisorError(_ended_early(runner.spec, event, runner.calls, runner.calls + 1))
        return runner.last_output


@contextlib.contextmanager
def _process_names_kept() -> Iterator[None]:
    """sys.argv and sys.modules["__main__"] as they were, once the script has set its own: a
    script measured in the advisor's own process (the quick protocol, the Python API) leaves
    them as it found them. sys.path keeps the script's folder (a later import of the script's
    may need it)."""
    argv, main = list(sys.argv), sys.modules.get("__main__")
    try:
        yield
    finally:
        sys.argv[:] = argv
        if main is not None:
            sys.modules["__main__"] = main


def _ended_early(spec: ScriptSpec, end: Any, calls: int, wanted: int) -> str:
    name = Path(spec.path).name
    if isinstance(end, ScriptEnd) and end.error is not None:
        return (
            f"{name} raised {type(end.error).__name__}: {first_line(end.error)} after "
            f"{calls} call(s) of the measured callable"
        )
    how = f"ended (exit code {end.exit_code if isinstance(end, ScriptEnd) else 1})"
    return (
        f"{name} {how} after {calls} call(s) of the measured callable; the advisor needed "
        f"{wanted}: give the script more iterations (its own arguments go after --)"
    )


def _name(target: Any) -> str:
    if torch_adapter.is_module(target):
        return type(target).__name__
    return str(getattr(target, "__qualname__", None) or getattr(target, "__name__", "callable"))

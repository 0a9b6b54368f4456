"""`advisor observe`: the user's script run once, as `python script.py args` would run it, in a
process whose environment names a TORCH_TRACE folder (set by the parent, so torch reads it when
the script first imports torch), with torch.profiler around a few warm calls of its hot
compiled callable. The files left are exactly those a user's own run would leave; the parent
judges them as `advisor trace` does.

The script's `torch.compile` calls are stood in for as in the survey (`script_survey`): each
callable is compiled once, as the script asked, and counted at each call. The observed one is
the first to begin its `warmup`-th call (or the one `pick` names, as `--callable` does for
`advisor run`); the profiler starts before that call (the profiler's own first-call costs
fall outside the steps), the next `steps` calls each run inside `record_function(STEP_RECORD)`,
and after the last of them the trace is exported and the profiler stopped. The script then
runs on to its end unchanged. Its stdout and stderr are its own (the terminal's).

Run as `python -m advisor.measure.observe_hook SPEC_JSON PLAN_JSON RESULT_JSON` by
`observe_script`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from advisor.core.errors import AdvisorError, first_line
from advisor.core.processes import run_process
from advisor.core.script import CompiledCallable, ScriptSpec
from advisor.core.serial import from_jsonable
from advisor.measure import torch_adapter
from advisor.measure.script_exec import CompileSites, named_by_compile, run_script
from advisor.measure.script_survey import ADVISOR_ERROR, callable_qualname, print_script_traceback
from advisor.measure.torch_adapter.intercept import (
    CompileRequest,
    Interceptor,
    RoutedCall,
    compile_request_call,
    intercepted,
    script_frame,
)

STEP_RECORD = "advisor::observe_step"  # the record_function around each profiled call
TRACE_ENV = "TORCH_TRACE"


@dataclass(frozen=True)
class ObservePlan:
    """What to profile: after `warmup` calls of the observed callable, its next `steps` calls;
    `pick` names the callable (`--callable FILE:LINE|NAME`; empty: the first to get there)."""

    warmup: int
    steps: int
    profile_path: str
    pick: str = ""


@dataclass(frozen=True)
class Observation:
    """How the observed run went: how the script ended, its own wall time, every compiled
    callable it reached, which one was profiled and what profiling it cost."""

    ended: str  # "finished", "exited", "raised"
    exit_code: int
    wall_s: float  # the script's run, from its start to its end (profiling and export included)
    callables: tuple[CompiledCallable, ...] = ()
    observed: int | None = None  # index in `callables`
    steps: int = 0  # calls profiled to their end
    steps_s: float = 0.0  # wall time inside the profiled calls
    profile_s: float = 0.0  # the profiler on, from its start to the export's end
    export_s: float = 0.0  # writing the Chrome trace
    error: str = ""  # the script's own exception, one line

    @property
    def hot(self) -> CompiledCallable | None:
        return None if self.observed is None else self.callables[self.observed]


@dataclass
class _Watch:
    """One compiled callable while the script runs: its record, and what its calls show so far
    (mutable: counted at each call)."""

    record: CompiledCallable
    calls: int = 0
    call_file: str = ""
    call_line: int = 0

    def frozen(self) -> CompiledCallable:
        return replace(
            self.record, calls=self.calls, call_file=self.call_file, call_line=self.call_line
        )

    def named(self, pick: str) -> bool:
        return self.frozen().named(pick)


@dataclass
class Observer:
    """The in-process side: counts every compiled callable's calls and profiles the steps."""

    plan: ObservePlan
    sites: CompileSites
    interceptor: Interceptor | None = None
    entries: list[_Watch] = field(default_factory=list)
    chosen: _Watch | None = None
    profiler: Any = None
    started: float = 0.0
    steps: int = 0
    steps_s: float = 0.0
    profile_s: float = 0.0
    export_s: float = 0.0

    def handle(self, req: CompileRequest) -> RoutedCall:
        site_file, site_line, ordinal = self.sites.place(req)
        name = type(req.target).__name__ if req.is_module else callable_qualname(req.target)
        kind = "--compile" if named_by_compile(req.target) else req.kind
        entry = _Watch(CompiledCallable(name, kind, site_file, site_line, ordinal=ordinal))
        self.entries.append(entry)
        routed = _Observed(req.eager_call(), entry, self)
        assert self.interceptor is not None
        # compiled once, as the script asked: the run is the script's own
        routed.route = compile_request_call(self.interceptor, req)
        return routed

    def before_call(self, entry: _Watch) -> None:
        """Start the profiler before the observed callable's `warmup`-th call (its first when
        there is no warm-up)."""
        if self.chosen is not None or entry.calls != max(1, self.plan.warmup):
            return
        if self.plan.pick and not entry.named(self.plan.pick):
            return
        self.chosen = entry
        self.profiler = torch_adapter.StepProfiler(STEP_RECORD)
        self.started = time.perf_counter()
        self.profiler.start()

    def profiles(self, entry: _Watch) -> bool:
        """Whether this call (the entry's `calls`-th) is a profiled step."""
        last = self.plan.warmup + self.plan.steps
        return entry is self.chosen and self.plan.warmup < entry.calls <= last

    def after_step(self, entry: _Watch, elapsed: float) -> None:
        self.steps += 1
        self.steps_s += elapsed
        if entry.calls == self.plan.warmup + self.plan.steps:
            export = time.perf_counter()
            self.profiler.stop(self.plan.profile_path)
            self.profiler = None
            now = time.perf_counter()
            self.export_s, self.profile_s = now - export, now - self.started

    def abandon(self) -> None:
        """The script ended with the profiler still on (too few calls): stop it, no file."""
        if self.profiler is not None:
            self.profiler.stop(None)
            self.profiler = None

    def observation(self, ended: str, exit_code: int, wall_s: float, error: str) -> Observation:
        chosen = self.chosen
        return Observation(
            ended=ended,
            exit_code=exit_code,
            wall_s=wall_s,
            callables=tuple(e.frozen() for e in self.entries),
            # by identity: two compiles at one site (a loop) can hold equal counts
            observed=next((i for i, e in enumerate(self.entries) if e is chosen), None),
            steps=self.steps,
            steps_s=self.steps_s,
            profile_s=self.profile_s,
            export_s=self.export_s,
            error=error,
        )


class _Observed(RoutedCall):
    """A compiled callable of the observed run: counted, and profiled on its steps."""

    def __init__(self, eager: Any, entry: _Watch, observer: Observer) -> None:
        super().__init__(eager)
        self.entry, self.observer = entry, observer

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        entry, observer = self.entry, self.observer
        entry.calls += 1
        if entry.calls == 1:
            entry.call_file, entry.call_line = script_frame(1)
        observer.before_call(entry)
        if not observer.profiles(entry):
            return super().__call__(*args, **kwargs)
        start = time.perf_counter()
        with observer.profiler.step():
            output = super().__call__(*args, **kwargs)
        observer.after_step(entry, time.perf_counter() - start)
        return output


def main(argv: list[str]) -> int:
    spec = ScriptSpec.from_param(json.loads(argv[0]))
    plan = from_jsonable(ObservePlan, json.loads(argv[1]))
    result = Path(argv[2])
    if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.abspath(os.getcwd()):
        sys.path.pop(0)  # `-m` put the working directory first; a script's run does not
    observer = Observer(plan, CompileSites(spec.path))
    with intercepted(observer.handle) as interceptor:
        observer.interceptor = interceptor
        start = time.perf_counter()
        try:
            end = run_script(spec)
        except AdvisorError as exc:  # a syntax error in the script: the parent's one line
            result.write_text(json.dumps({ADVISOR_ERROR: str(exc)}), encoding="utf-8")
            return 2
        wall_s = time.perf_counter() - start
    observer.abandon()
    if end.error is not None:
        print_script_traceback(end.error, spec.path)
        error = f"{type(end.error).__name__}: {first_line(end.error)}"
        observation = observer.observation("raised", 1, wall_s, error)
    else:
        ended = "finished" if end.exit_code == 0 else "exited"
        observation = observer.observation(ended, end.exit_code, wall_s, "")
    result.write_text(json.dumps(asdict(observation)), encoding="utf-8")
    return observation.exit_code


# --- the parent's side ------------------------------------------------------------------------


def observe_script(spec: ScriptSpec, plan: ObservePlan, folder: Path) -> Observation:
    """Run the script once with TORCH_TRACE=`folder`/torch_trace and the profile planned; the
    script's output goes to the terminal. The script's own failure is in the observation;
    the advisor's refusal (a syntax error) is an AdvisorError."""
    result = folder / "observed.json"
    command = [sys.executable, "-m", "advisor.measure.observe_hook"]
    command += [json.dumps(spec.to_param()), json.dumps(asdict(plan)), str(result)]
    env = dict(os.environ, **{TRACE_ENV: str(folder / "torch_trace")})
    sys.stdout.flush()
    sys.stderr.flush()
    # stdout/stderr None: the script's own output reaches the terminal, as when run alone
    outcome = run_process(
        command,
        None,
        stdout=None,  # type: ignore[arg-type]
        stderr=None,  # type: ignore[arg-type]
        cwd=spec.cwd or None,
        env=env,
    )
    if not result.is_file():
        raise AdvisorError(
            f"{Path(spec.path).name} ended without a record (exit status {outcome.returncode}"
            f"{', ' + outcome.signal if outcome.signal else ''})"
        )
    data = json.loads(result.read_text(encoding="utf-8"))
    result.unlink()
    if ADVISOR_ERROR in data:
        raise AdvisorError(str(data[ADVISOR_ERROR]))
    return from_jsonable(Observation, data)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The survey: the user's script run once, in a process of its own, as `python script.py args`
would run it, to find every callable it passes through `torch.compile`, where, how often it is
called and how long its calls take. Its compiles are the script's own (default mode, the
script's keyword arguments). The survey stops when the script ends, when every compiled callable
seen has made `SURVEY_CALLS` warm calls (enough to choose the hot one: the script need not run
its whole training), or at its time budget. The script's stdout and stderr go to files of their
own, never to the advisor's terminal.

Run as `python -m advisor.measure.script_survey SPEC_JSON OUT_JSON BUDGET_S` by `survey_script`.
"""

from __future__ import annotations

import ast
import json
import os
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from advisor.core.errors import AdvisorError, first_line
from advisor.core.processes import run_process
from advisor.core.script import CompiledCallable, ScriptSpec, ScriptSurvey
from advisor.core.serial import from_jsonable
from advisor.measure import torch_adapter
from advisor.measure.script_exec import CompileSites, ScriptEnd, named_by_compile, run_script
from advisor.measure.torch_adapter.intercept import (
    CompileRequest,
    Interceptor,
    RoutedCall,
    compile_request_call,
    intercepted,
    script_frame,
)

SURVEY_CALLS = 30  # warm calls of every compiled callable seen before the survey may stop
TAIL_CHARS = 4000  # how much of the script's own stdout and stderr the report keeps
ADVISOR_ERROR = "advisor_error"  # the survey's record when the advisor itself refused the run
WATCH_S = 0.25  # how often the budget is checked outside compiled calls
KILL_GRACE_S = 120.0  # past the budget, a compiled call (a long compile) may still end this late


@dataclass
class _Entry:
    record: CompiledCallable
    calls: int = 0
    total_s: float = 0.0
    first_call_s: float | None = None
    backward: bool = False
    call_file: str = ""
    call_line: int = 0
    between_s: float = 0.0
    last_start: float | None = None

    def frozen(self) -> CompiledCallable:
        return replace(
            self.record,
            calls=self.calls,
            total_s=self.total_s,
            first_call_s=self.first_call_s,
            backward=self.backward,
            call_file=self.call_file,
            call_line=self.call_line,
            between_s=self.between_s,
        )


@dataclass
class Survey:
    """What the survey process has seen so far; it writes OUT_JSON when it stops."""

    spec: ScriptSpec
    out: Path
    budget_s: float
    started: float = field(default_factory=time.perf_counter)
    entries: list[_Entry] = field(default_factory=list)
    interceptor: Interceptor | None = None
    sites: CompileSites = field(init=False)
    in_call: bool = False  # a compiled call is running (its end checks the budget itself)

    def __post_init__(self) -> None:
        self.sites = CompileSites(self.spec.path)

    def watch(self) -> None:
        """Stop the script at its budget where it is not inside a compiled call (it sleeps,
        loads data, or never compiles); a call in progress is stopped when it returns."""
        while True:
            time.sleep(WATCH_S)
            if not self.in_call and time.perf_counter() - self.started > self.budget_s:
                self.stop("budget")

    def handle(self, req: CompileRequest) -> RoutedCall:
        site_file, site_line, ordinal = self.sites.place(req)
        name = type(req.target).__name__ if req.is_module else callable_qualname(req.target)
        kind = "--compile" if named_by_compile(req.target) else req.kind
        entry = _Entry(CompiledCallable(name, kind, site_file, site_line, ordinal=ordinal))
        self.entries.append(entry)
        routed = _Counted(req.eager_call(), entry, self)
        assert self.interceptor is not None
        routed.route = compile_request_call(self.interceptor, req)
        return routed

    def after_call(self) -> None:
        if time.perf_counter() - self.started > self.budget_s:
            self.stop("budget")
        if all(e.calls > SURVEY_CALLS for e in self.entries):
            self.stop("enough_calls")

    def stop(self, ended: str) -> None:
        """End the script here (enough seen, or its budget spent): write and leave at once."""
        self.write(ended, None)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    def write(self, ended: str, exit_code: int | None, error: str = "") -> None:
        compiled = bool(self.entries)  # else: say what the script made and called instead
        survey = ScriptSurvey(
            path=self.spec.path,
            argv=self.spec.argv,
            cwd=self.spec.cwd,
            exit_code=exit_code,
            ended=ended,
            wall_s=time.perf_counter() - self.started,
            callables=tuple(e.frozen() for e in self.entries),
            error=error,
            modules_called=() if compiled else _modules_alive(),
            loop_calls=() if compiled else _loop_calls(Path(self.spec.path)),
        )
        self.out.write_text(json.dumps(asdict(survey)), encoding="utf-8")


class _Counted(RoutedCall):
    """A compiled callable of the survey: timed and counted at each call."""

    def __init__(self, eager: Any, entry: _Entry, survey: Survey) -> None:
        super().__init__(eager)
        self.entry, self.survey = entry, survey

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        entry = self.entry
        if entry.calls == 0:
            entry.call_file, entry.call_line = script_frame(1)
        self.survey.in_call = True
        start = time.perf_counter()
        if entry.calls > 1 and entry.last_start is not None:
            entry.between_s += start - entry.last_start
        entry.last_start = start
        output = super().__call__(*args, **kwargs)
        torch_adapter.synchronize_if_initialised()
        elapsed = time.perf_counter() - start
        self.survey.in_call = False
        if entry.calls == 0:
            entry.first_call_s = elapsed
        else:
            entry.total_s += elapsed
        entry.calls += 1
        if not entry.backward:
            _on_backward(output, entry)
        self.survey.after_call()
        return output


def _on_backward(output: Any, entry: _Entry) -> None:
    """Mark the entry when a backward pass runs through this call's output (a training loop:
    the loss's backward and the optimizer run between its calls). An output that merely
    requires grad (an inference loop without `no_grad`) does not count."""
    leaves, _ = torch_adapter.tree_leaves_and_spec(output)
    tensor = next((t for t in leaves if getattr(t, "requires_grad", False)), None)
    if tensor is None:
        return

    def seen(grad: Any) -> None:
        entry.backward = True

    tensor.register_hook(seen)


def callable_qualname(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", type(fn).__name__))


def _modules_alive() -> tuple[str, ...]:
    """nn.Modules the script made that are no other module's part, by class (user classes)."""
    modules = torch_adapter.live_modules()
    children = {id(c) for m in modules for c in m.children()}
    roots = Counter(
        type(m).__name__
        for m in modules
        if id(m) not in children and not type(m).__module__.startswith("torch.")
    )
    return tuple(name for name, _ in roots.most_common(8))


def _loop_calls(path: Path) -> tuple[str, ...]:
    """Names the script calls inside its `for` and `while` loops (read from its source)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return ()
    names: Counter[str] = Counter()
    for loop in (n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))):
        for node in (n for stmt in loop.body for n in ast.walk(stmt)):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else None
                name = name or (func.attr if isinstance(func, ast.Attribute) else None)
                if name and not name.startswith("_"):
                    names[name] += 1
    return tuple(n for n, _ in names.most_common(10))


def main(argv: list[str]) -> int:
    spec = ScriptSpec.from_param(json.loads(argv[0]))
    survey = Survey(spec, Path(argv[1]), float(argv[2]))
    if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.abspath(os.getcwd()):
        sys.path.pop(0)  # `-m` put the working directory first; a script's run does not
    threading.Thread(target=survey.watch, daemon=True).start()
    with intercepted(survey.handle) as interceptor:
        survey.interceptor = interceptor
        survey.started = time.perf_counter()
        try:
            end: ScriptEnd = run_script(spec)
        except AdvisorError as exc:  # bad input (--compile, a syntax error): the parent's line
            survey.out.write_text(json.dumps({ADVISOR_ERROR: str(exc)}), encoding="utf-8")
            return 2
    if end.error is not None:
        print_script_traceback(end.error, spec.path)
        survey.write("raised", 1, f"{type(end.error).__name__}: {first_line(end.error)}")
        return 1
    survey.write("finished" if end.exit_code == 0 else "exited", end.exit_code)
    return end.exit_code


def print_script_traceback(error: BaseException, path: str) -> None:
    """The script's traceback as Python prints it, from the script's own frames down."""
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != path:
        tb = tb.tb_next
    traceback.print_exception(type(error), error, tb or error.__traceback__)


# --- the parent's side ------------------------------------------------------------------------


def survey_script(spec: ScriptSpec, budget_s: float) -> ScriptSurvey:
    """Run the survey process and read what it found; the script's output kept apart."""
    with tempfile.TemporaryDirectory(prefix="advisor-survey-") as folder:
        out, stdout, stderr = (Path(folder) / n for n in ("survey.json", "stdout", "stderr"))
        command = [sys.executable, "-m", "advisor.measure.script_survey"]
        command += [json.dumps(spec.to_param()), str(out), str(budget_s)]
        with stdout.open("wb") as so, stderr.open("wb") as se:
            # past the budget plus a grace the script hung outside its compiled calls: killed
            # (with its process group: DataLoader workers too); what it wrote is all there is
            outcome = run_process(
                command, budget_s + KILL_GRACE_S, stdout=so, stderr=se, cwd=spec.cwd or None
            )
        tails = {"stdout_tail": _tail(stdout), "stderr_tail": _tail(stderr)}
        if not out.is_file() and not outcome.timed_out:
            last = (tails["stderr_tail"].strip().splitlines() or ["no output"])[-1]
            raise AdvisorError(
                f"the survey of {Path(spec.path).name} ended without a record "
                f"(exit status {outcome.returncode}): {last}"
            )
        if not out.is_file():
            return ScriptSurvey(spec.path, spec.argv, spec.cwd, None, "budget", budget_s, **tails)
        data = json.loads(out.read_text(encoding="utf-8"))
    if ADVISOR_ERROR in data:
        raise AdvisorError(str(data[ADVISOR_ERROR]))
    try:
        survey = from_jsonable(ScriptSurvey, data)
    except ValueError as exc:
        raise AdvisorError(f"the survey of {spec.path} wrote a record that cannot be read") from exc
    return replace(survey, **tails)


def _tail(path: Path) -> str:
    text = path.read_bytes()[-TAIL_CHARS * 4 :].decode("utf-8", errors="replace")
    return text[-TAIL_CHARS:]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A script as the target, on the parent's side: tell a script from a factory file, survey it
(`script_survey`), choose the compiled callable to measure and how, or say in one line why the
script cannot be measured (its own failure, no `torch.compile`, too few iterations)."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import math
import os
from pathlib import Path

from advisor.core.errors import AdvisorError
from advisor.core.model import Settings
from advisor.core.script import SCRIPT_PARAM, CompiledCallable, ScriptSpec, ScriptSurvey

SNAPSHOT_CALL = 3  # unit "call": the call whose arguments are replayed (past first-call paths)
SURVEY_BUDGET_S = 300.0  # the survey's time budget when no --timeout is given


class ScriptFailed(AdvisorError):
    """The script itself failed before the advisor could measure anything: what it printed
    (`stdout`, the tail), its own stderr with the traceback (`stderr`), then one line, and the
    advisor exits with the script's exit code."""

    def __init__(self, message: str, exit_code: int, stderr: str, stdout: str = "") -> None:
        super().__init__(message)
        self.exit_code = exit_code  # type: ignore[misc]
        self.stderr = stderr
        self.stdout = stdout


def is_script_target(target: str, script_args: tuple[str, ...] = ()) -> bool:
    """A `.py` file without `:factory` is a script, unless it defines a top-level `workload`
    factory and no script arguments were given (the factory form, as before)."""
    if ":" in target or not target.endswith(".py"):
        return False
    if script_args:
        return True
    path = Path(target)
    return path.is_file() and not _defines_factory(path)


def _defines_factory(path: Path) -> bool:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return False  # the script's own error shows when it runs
    return any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "workload"
        for n in tree.body
    )


def script_spec(
    target: str,
    argv: tuple[str, ...],
    pick: str = "",
    unit: str = "auto",
    compile_names: tuple[str, ...] = (),
) -> ScriptSpec:
    """The spec of a script run from the command line's words; a missing file is bad input."""
    path = Path(target)
    if not path.is_file():
        raise AdvisorError(f"file not found: {target}")
    return ScriptSpec(
        path=str(path.resolve()),
        argv=tuple(argv),
        cwd=os.getcwd(),
        unit=unit,
        compile=tuple(compile_names),
        pick=pick,
    )


def planned(spec: ScriptSpec, survey: ScriptSurvey, settings: Settings) -> ScriptSurvey:
    """The survey with the measured callable, unit and snapshot call chosen, or the one-line
    reason the script cannot be measured."""
    _check_ran(spec, survey)
    index = _pick(spec.pick, survey.callables) if spec.pick else _hottest(survey.callables)
    hot = survey.callables[index]
    unit = spec.unit if spec.unit != "auto" else ("iteration" if hot.backward else "call")
    at_call = max(1, min(SNAPSHOT_CALL, hot.calls))
    if unit == "iteration":
        _check_iterations(spec, survey, hot, settings)
    return dataclasses.replace(survey, measured=index, unit=unit, at_call=at_call)


def measured_spec(spec: ScriptSpec, survey: ScriptSurvey) -> ScriptSpec:
    """What every measuring process runs: the spec pinned to the chosen callable."""
    hot = survey.hot
    assert hot is not None
    return dataclasses.replace(spec, key=hot.key, unit=survey.unit, at_call=survey.at_call)


def script_params(spec: ScriptSpec) -> tuple[tuple[str, object], ...]:
    return ((SCRIPT_PARAM, spec.to_param()),)


def _check_ran(spec: ScriptSpec, survey: ScriptSurvey) -> None:
    name = Path(spec.path).name
    if survey.callables:
        return
    not_started = "the advisor had not started measuring"
    if survey.ended == "raised":
        code = survey.exit_code or 1
        message = (
            f"{name} raised {survey.error} (exit code {code}) before any compiled call; "
            f"{not_started}"
        )
        raise ScriptFailed(message, code, survey.stderr_tail, survey.stdout_tail)
    if survey.ended == "exited":
        code = survey.exit_code or 1
        message = f"{name} exited with code {code} before any compiled call; {not_started}"
        raise ScriptFailed(message, code, survey.stderr_tail, survey.stdout_tail)
    if survey.ended == "budget":
        raise AdvisorError(
            f"{name} ran past its budget of {survey.wall_s:.0f} s without a compiled call; "
            f"{not_started} (raise it with --timeout, or give the script fewer steps)"
        )
    raise AdvisorError(_no_compile_message(name, survey))


def _no_compile_message(name: str, survey: ScriptSurvey) -> str:
    found = []
    if survey.modules_called:
        found.append("made the modules " + ", ".join(survey.modules_called))
    if survey.loop_calls:
        found.append("called " + ", ".join(survey.loop_calls) + " in its loops")
    seen = f"; it {' and '.join(found)}" if found else ""
    example = survey.modules_called[0] if survey.modules_called else "NAME"
    return (
        f"{name} never called torch.compile{seen}: name what to compile with "
        f"--compile {name}:{example} (a class or function of the script) or "
        "--compile package.module.NAME"
    )


def _hottest(callables: tuple[CompiledCallable, ...]) -> int:
    """The callable with the most time in its warm calls (the first one on a tie)."""
    return max(range(len(callables)), key=lambda i: (callables[i].total_s, -i))


def _pick(pick: str, callables: tuple[CompiledCallable, ...]) -> int:
    """`--callable FILE:LINE` (where it was compiled or first called) or `--callable NAME`."""
    found = next((i for i, c in enumerate(callables) if c.named(pick)), None)
    if found is not None:
        return found
    known = ", ".join(f"{c.name} ({Path(c.site_file).name}:{c.site_line})" for c in callables)
    raise AdvisorError(f"--callable {pick} matches no compiled callable of the script ({known})")


def _check_iterations(
    spec: ScriptSpec, survey: ScriptSurvey, hot: CompiledCallable, settings: Settings
) -> None:
    """A loop iteration is timed in the script's own loop: each measuring process needs this
    many iterations, and a script that ends sooner cannot give them."""
    if survey.ended not in ("finished", "exited", "raised") or hot.calls < 3:
        return
    iteration_s = hot.between_s / max(1, hot.calls - 2)
    per_block = max(1, math.ceil(settings.min_block_s / max(iteration_s, 1e-6)))
    needed = 6 + settings.warmup + max(settings.repeats, settings.profile_calls) * per_block
    if hot.calls < needed:
        raise AdvisorError(
            f"{Path(spec.path).name} calls {hot.name} {hot.calls} times with these arguments; "
            f"timing its loop iterations needs about {needed} per process: give the script "
            "more iterations (its own arguments go after --)"
        )


def script_from_args(args: argparse.Namespace) -> ScriptSpec | None:
    """The script's spec where the target is the user's own script (`run`, `check`); None for
    a factory target, which takes no script arguments or script options."""
    script_args = tuple(getattr(args, "script_args", ()))
    if not is_script_target(args.target, script_args):
        given = [f for f, v in (("--callable", args.callable), ("--compile", args.compile)) if v]
        if script_args or given or args.unit != "auto":
            what = "arguments after --" if script_args else (given or ["--unit"])[0]
            raise AdvisorError(f"{what}: only for a script target (path/to/script.py)")
        return None
    if args.param:
        raise AdvisorError("--param is for a factory; a script takes its arguments after --")
    pick, names = args.callable or "", tuple(args.compile)
    return script_spec(args.target, script_args, pick, args.unit, names)

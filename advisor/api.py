"""The Python API: `advisor.analyse(fn_or_module, *args, **options) -> AnalysedReport`.

The same run as `advisor run` (`advisor.runner`), for notebooks and scripts: it writes no files
(`report.save(folder)` does, when asked) and leaves the process as it found it, except for
Dynamo's compiled code, which it resets (see `analyse`).
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

from advisor.core import options as options_module
from advisor.core.artifacts import Measurements
from advisor.core.errors import AdvisorError
from advisor.core.model import Report, Settings
from advisor.measure.workload import (
    Workload,
    api_target,
    inputs_device,
    moved_to,  # the same move as for a device-agnostic factory
)

Progress = Callable[[str], None]

# Isolation runs the workload in worker processes that import it by target name: a function
# or module built in this process cannot be sent there (use `advisor run --isolate`).
_SETTINGS = {f.name for f in dataclasses.fields(Settings)} - {"isolate", "timeout_s"}


class AnalysedReport(Report):
    """A `Report` from `analyse`: it saves itself with its measurements, and a notebook shows
    it inline."""

    def save(self, folder: str | os.PathLike[str]) -> pathlib.Path:
        """Write report.json, report.md, report.html, trace.json and measurements.json into
        `folder` (created if needed) and return it; raises `AdvisorError` rather than
        overwrite an existing file."""
        from advisor.render import report_io

        measurements: Measurements | None = getattr(self, "_measurements", None)
        return report_io.save_report(self, pathlib.Path(folder), measurements)

    def _repr_html_(self) -> str:
        """The HTML report, inline in Jupyter (in an iframe, so its styles stay its own)."""
        from advisor.render.html import render_notebook_html

        return render_notebook_html(self)


def analysed(report: Report, measurements: Measurements | None) -> AnalysedReport:
    fields = {f.name: getattr(report, f.name) for f in dataclasses.fields(Report)}
    out = AnalysedReport(**fields)
    object.__setattr__(out, "_measurements", measurements)  # not a field: not in report.json
    return out


def analyse(
    fn_or_module: Callable[..., Any],
    *args: Any,
    device: str = "auto",
    kwargs: Mapping[str, Any] | None = None,
    name: str | None = None,
    progress: bool | Progress = True,
    compiled_module: Any = None,
    **options: Any,
) -> AnalysedReport:
    """Benchmark `fn_or_module(*args, **kwargs)` in eager, default `torch.compile` and
    `fullgraph=True`, find and cost its graph breaks, and return the `Report`.

    `device="auto"` measures where the inputs are (the first tensor among the args, kwargs and
    the module's parameters; CUDA when available if there is none); another device moves the
    inputs there, and the module too (`nn.Module.to` moves it in place). `options` are the
    fields of `advisor.core.model.Settings`: warmup, repeats, budget_s, min_block_s, threads,
    profile_calls, what_if, ignore_share. `progress=True` prints what it is doing on stderr;
    pass False for silence or a callable to receive the messages.

    A training step: `analyse(step, x, y, compiled_module=model)` compiles `model` in place
    (`model.compile()`) and times the whole step eagerly around it; without `compiled_module`
    the step function itself is compiled.

    Nothing is written to disk. Dynamo and Inductor config, logging levels and handlers, Python
    warning filters, torch's thread count, grad mode and random state are restored afterwards.
    Dynamo's caches are reset (`torch._dynamo.reset()`) before each compiled mode and again at
    the end, so other functions compiled in this process compile again on their next call.
    Bad input raises `advisor.core.errors.AdvisorError` (or TypeError for an unknown option).
    """
    from advisor import runner
    from advisor.measure import harness, pipeline, torch_adapter
    from advisor.measure.process_state import restored_globals
    from advisor.measure.quiet import muted_dynamo_warnings

    settings = _settings(options)
    with restored_globals():
        resolved = harness.resolve_device(inputs_device(device, fn_or_module, args, kwargs or {}))
        workload = _workload(fn_or_module, args, kwargs or {}, name, compiled_module)
        if device != "auto":
            workload = moved_to(workload, resolved)
        run_options = pipeline.RunOptions(api_target(fn_or_module), device, settings)
        try:
            with muted_dynamo_warnings():
                result = runner.run_workload(workload, run_options, resolved, _progress(progress))
            return analysed(result.report, result.measurements)
        finally:
            torch_adapter.reset_dynamo()


def analyse_script(
    script: str | os.PathLike[str],
    *argv: str,
    device: str = "auto",
    callable_name: str = "",
    unit: str = "auto",
    compile_names: tuple[str, ...] = (),
    progress: bool | Progress = True,
    **options: Any,
) -> AnalysedReport:
    """`advisor run SCRIPT -- ARGV` from Python: the script runs as it is (as `__main__`, with
    `argv`, in the current working directory), its hottest compiled callable is measured in every
    arm with the replicated protocol (each arm in worker processes of its own: nothing is
    compiled in this process) and the report comes back. `callable_name`, `unit` and
    `compile_names` are `--callable`, `--unit` and `--compile`; `options` the `Settings` fields
    (`protocol="quick"` measures in one worker-free pass, in this process)."""
    from advisor import runner
    from advisor.measure import pipeline
    from advisor.measure.process_state import restored_globals
    from advisor.measure.quiet import muted_dynamo_warnings
    from advisor.measure.script_target import is_script_target, script_spec

    target = os.fspath(script)
    if not is_script_target(target, tuple(argv) or ("",)):
        raise AdvisorError(f"analyse_script() needs a Python script (path/to/script.py): {target}")
    spec = script_spec(target, tuple(argv), callable_name, unit, tuple(compile_names))
    settle = options_module.settle_waves(options.get("processes"))  # as `advisor run` asks
    settings = Settings(**{"protocol": "replicated", "settle_waves": settle, **options})
    run_options = pipeline.RunOptions(target, device, settings, script=spec)
    # the quick protocol runs the script here: its grad mode, threads, config are put back
    with restored_globals(), muted_dynamo_warnings():
        result = runner.run(run_options, _progress(progress))
    return analysed(result.report, result.measurements)


def _settings(options: Mapping[str, Any]) -> Settings:
    if {"isolate", "timeout_s"} & set(options):
        raise AdvisorError(
            "analyse() measures in this process: isolation needs a target the worker processes "
            "can import (use `advisor run TARGET --isolate`)"
        )
    unknown = sorted(set(options) - _SETTINGS)
    if unknown:
        raise TypeError(
            f"analyse() got unknown option(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(_SETTINGS))}"
        )
    return Settings(**options)


def _progress(progress: bool | Progress) -> Progress:
    if callable(progress):
        return progress
    if progress:
        return lambda message: print(f"advisor: {message}", file=sys.stderr, flush=True)
    return lambda _message: None


def _workload(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    name: str | None,
    compiled_module: Any,
) -> Workload:
    if not callable(fn):
        raise AdvisorError(f"analyse() needs a function or nn.Module, got {type(fn).__name__}")
    if compiled_module is not None and not callable(getattr(compiled_module, "compile", None)):
        raise AdvisorError(
            "analyse(compiled_module=...) needs an nn.Module (compiled in place), got "
            f"{type(compiled_module).__name__}"
        )
    label = name or getattr(fn, "__name__", None) or type(fn).__name__
    return Workload(fn, tuple(args), dict(kwargs), label, compiled_module=compiled_module)

"""A run, end to end: measure (replicated: every compared arm in worker processes of its own,
driven round by round; quick: in this process; isolated: each mode in a process of its own; or
in N data-parallel rank processes at once), then judge. Used by `advisor run`, `advisor check` and
`advisor.analyse`; it writes nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from advisor.core.artifacts import Measurements
from advisor.core.model import Report
from advisor.core.script import ScriptSurvey
from advisor.judge import judge, judge_partial
from advisor.measure import harness, torch_adapter
from advisor.measure.pipeline import MeasureInterrupted, Progress, RunOptions, measure_workload
from advisor.measure.script_run import stdout_muted
from advisor.measure.workload import Workload, load_target


@dataclass(frozen=True)
class RunResult:
    report: Report
    measurements: Measurements


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run; `result` holds the report of what was measured until then
    (`incomplete`) and those measurements."""

    def __init__(self, result: RunResult) -> None:
        super().__init__("interrupted")
        self.result = result


def run(options: RunOptions, progress: Progress = lambda _msg: None) -> RunResult:
    """Measure and judge one target. Ctrl-C raises `RunInterrupted` with the partial report.
    A script target is surveyed first, then measured like any other (its survey kept in the
    measurements)."""
    device = harness.resolve_device(options.device)
    if options.script is None:
        return _run(options, device, progress)
    from advisor.measure.script_run import surveyed

    options, survey = surveyed(options, progress)
    try:
        result = _run(options, device, progress)
    except RunInterrupted as stop:
        raise RunInterrupted(_with_script(stop.result, survey)) from None
    return _with_script(result, survey)


def _with_script(result: RunResult, survey: ScriptSurvey) -> RunResult:
    measurements = dataclasses.replace(result.measurements, script=survey)
    return RunResult(dataclasses.replace(result.report, script=survey), measurements)


def _run(options: RunOptions, device: str, progress: Progress) -> RunResult:
    if options.settings.ranks > 1:
        from advisor.measure.ranks import measure_ranks

        return _judged(lambda: measure_ranks(options, device, progress))
    if options.settings.isolate:
        from advisor.measure.isolate import measure_isolated

        return _judged(lambda: measure_isolated(options, device, progress))
    if options.settings.protocol == "replicated":
        from advisor.measure.replicated_run import measure_replicated

        return _judged(lambda: measure_replicated(options, device, progress))
    with stdout_muted(options.script is not None):  # a script's prints are not the advisor's
        workload = load_target(options.target, device, dict(options.params))
        try:
            return run_workload(workload, options, device, progress)
        finally:
            torch_adapter.reset_dynamo()  # leave no compiled state behind for the next run


def run_workload(
    workload: Workload, options: RunOptions, device: str, progress: Progress
) -> RunResult:
    """Measure and judge a workload built in this process (the quick protocol: a callable
    built here cannot be sent to worker processes)."""
    if options.settings.protocol != "quick":
        settings = dataclasses.replace(options.settings, protocol="quick")
        options = dataclasses.replace(options, settings=settings)
    return _judged(lambda: measure_workload(workload, options, device, progress))


def _judged(measure: Callable[[], Measurements]) -> RunResult:
    try:
        measurements = measure()
    except MeasureInterrupted as stop:
        partial = stop.measurements
        raise RunInterrupted(RunResult(judge_partial(partial), partial)) from None
    return RunResult(judge(measurements), measurements)

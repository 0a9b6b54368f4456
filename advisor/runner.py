"""A run, end to end: measure (replicated: every compared arm in worker processes of its own,
driven round by round; quick: in this process; isolated: each mode in a process of its own; or
in N data-parallel rank processes at once), then judge. `advisor run` measures here and judges
after saving the measurements; `advisor check` and `advisor.analyse` measure and judge here. It
writes nothing."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from advisor.core.artifacts import Measurements
from advisor.core.model import Report
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
    """Measure and judge one target. Ctrl-C raises `RunInterrupted` with the partial report."""
    measurements = measure(options, progress)
    if measurements.incomplete:
        raise RunInterrupted(RunResult(judge_partial(measurements), measurements))
    return RunResult(judge(measurements), measurements)


def measure(options: RunOptions, progress: Progress = lambda _msg: None) -> Measurements:
    """Measure one target, judging nothing (the CLI saves these before it judges). Ctrl-C ends
    it with what was measured until then, marked `incomplete`. A script target is surveyed
    first, then measured like any other (its survey kept in the measurements)."""
    device = harness.resolve_device(options.device)
    if options.script is None:
        return _measured(options, device, progress)
    from advisor.measure.script_run import surveyed

    options, survey = surveyed(options, progress)
    return dataclasses.replace(_measured(options, device, progress), script=survey)


def _measured(options: RunOptions, device: str, progress: Progress) -> Measurements:
    try:
        return _measure(options, device, progress)
    except MeasureInterrupted as stop:
        return stop.measurements


def _measure(options: RunOptions, device: str, progress: Progress) -> Measurements:
    if options.settings.ranks > 1:
        from advisor.measure.ranks import measure_ranks

        return measure_ranks(options, device, progress)
    if options.settings.isolate:
        from advisor.measure.isolate import measure_isolated

        return measure_isolated(options, device, progress)
    if options.settings.protocol == "replicated":
        from advisor.measure.replicated_run import measure_replicated

        return measure_replicated(options, device, progress)
    with stdout_muted(options.script is not None):  # a script's prints are not the advisor's
        workload = load_target(options.target, device, dict(options.params))
        try:
            return measure_workload(workload, _quick(options), device, progress)
        finally:
            torch_adapter.reset_dynamo()  # leave no compiled state behind for the next run


def run_workload(
    workload: Workload, options: RunOptions, device: str, progress: Progress
) -> RunResult:
    """Measure and judge a workload built in this process (the quick protocol: a callable
    built here cannot be sent to worker processes)."""
    try:
        measurements = measure_workload(workload, _quick(options), device, progress)
    except MeasureInterrupted as stop:
        partial = stop.measurements
        raise RunInterrupted(RunResult(judge_partial(partial), partial)) from None
    return RunResult(judge(measurements), measurements)


def _quick(options: RunOptions) -> RunOptions:
    if options.settings.protocol == "quick":
        return options
    settings = dataclasses.replace(options.settings, protocol="quick")
    return dataclasses.replace(options, settings=settings)

"""The pipeline, end to end: measure everything, then judge once.

    workload -> harness (modes; capture during the default compile) -> profile -> what-ifs
             -> attribute -> advise -> Report

Which knobs to try follows from the capture (the kinds of break it saw), not from the advice,
so every measurement is taken before anything is judged. This module only orchestrates; each
stage lives in its own module. It returns a `Report` and writes nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from advisor import environment, harness, torch_adapter
from advisor.advise import Advice, advise, recompile_advice
from advisor.artifacts import Capture, ProfileTrace
from advisor.attribute import attribute
from advisor.capture import CaptureSession
from advisor.errors import first_line
from advisor.model import (
    Attribution,
    BreakSite,
    Environment,
    ModeResult,
    Report,
    Settings,
    WhatIf,
    WorkloadInfo,
)
from advisor.profile import profile_calls
from advisor.quiet import filtered_native_stderr
from advisor.taxonomy import Knob, knob_for
from advisor.whatif import measure_guard_skip, measure_knob
from advisor.workload import Workload, load_target

Progress = Callable[[str], None]

# Profiler sessions per run, each paired with its own unprofiled timing (see profile_calls).
PROFILE_SESSIONS = 4


@dataclass(frozen=True)
class RunOptions:
    target: str
    device: str = "auto"
    settings: Settings = field(default_factory=Settings)
    modes: tuple[str, ...] = ("eager", "default", "fullgraph")
    params: tuple[tuple[str, Any], ...] = ()  # keyword arguments for the target's factory


@dataclass
class Measurements:
    """Everything measured for one workload, before any judgement."""

    modes: list[ModeResult]
    capture: Capture
    trace: ProfileTrace | None = None
    what_ifs: list[WhatIf] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    environment: Environment | None = None  # read when measuring started


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run; `report` holds what was measured until then (`incomplete`)."""

    def __init__(self, report: Report) -> None:
        super().__init__("interrupted")
        self.report = report


@dataclass
class PartialRun:
    """What `measure` has collected so far, read when the run is interrupted."""

    record: harness.HarnessRecord = field(default_factory=harness.HarnessRecord)
    session: CaptureSession | None = None
    measured: Measurements | None = None  # set once the modes are measured

    def measurements(self) -> Measurements:
        if self.measured is not None:
            return self.measured
        capture, warnings = Capture(), list(self.record.warnings)
        if self.session is not None:
            try:
                capture = self.session.result()
            except Exception as exc:  # a compile cut off half-way: report the modes alone
                warnings.append(f"the interrupted capture could not be read: {first_line(exc)}")
        return Measurements(self.record.modes_so_far(), capture, warnings=warnings)


def run(options: RunOptions, progress: Progress = lambda _msg: None) -> Report:
    """Measure and judge one target. Ctrl-C raises `RunInterrupted` with the partial report."""
    started = time.perf_counter()
    device = harness.resolve_device(options.device)
    if options.settings.isolate:
        from advisor.isolate import run_isolated

        return run_isolated(options, device, progress, started)
    workload = load_target(options.target, device, dict(options.params))
    try:
        return analyse(workload, options, device, progress, started)
    finally:
        torch_adapter.reset_dynamo()  # leave no compiled state behind for the next run


def analyse(
    workload: Workload, options: RunOptions, device: str, progress: Progress, started: float
) -> Report:
    partial = PartialRun()
    try:
        measured = measure(workload, options, device, progress, partial)
    except KeyboardInterrupt:
        report = judge_partial(workload, options, device, partial.measurements(), started)
        raise RunInterrupted(report) from None
    return judge(workload, options, device, measured, started)


def measure(
    workload: Workload,
    options: RunOptions,
    device: str,
    progress: Progress,
    partial: PartialRun | None = None,
) -> Measurements:
    # Every stage (modes, profile, what-ifs) runs with the same threads and CPUs; the
    # environment is read first, so its load average is the machine's before we add to it.
    partial = partial if partial is not None else PartialRun()
    with harness.pinned(options.settings.threads):
        env = environment.describe(device)
        out = _measure(workload, options, device, progress, partial)
    out.environment = env
    return out


def _measure(
    workload: Workload, options: RunOptions, device: str, progress: Progress, partial: PartialRun
) -> Measurements:
    settings = options.settings
    progress(
        f"measuring {workload.name} on {device}: eager, fullgraph and default "
        "torch.compile (Inductor compiles can take a while)..."
    )
    session = partial.session = CaptureSession()
    run = harness.measure(
        workload,
        settings,
        device,
        modes=options.modes,
        observers={"default": lambda: session},
        record=partial.record,
    )
    out = Measurements(list(run.modes), session.result(), warnings=list(run.warnings))
    out.warnings += list(out.capture.warnings)
    partial.measured = out
    default = next((m for m in run.modes if m.mode == "default"), None)
    if default is None or default.status != "ok" or "default" not in run.calls:
        return out
    progress(f"profiling {settings.profile_calls} warm calls of the default mode...")
    out.trace = profile_default(run.calls["default"], settings, device, out.warnings)
    if settings.what_if:
        progress("what-if: measuring the default mode without guard evaluation...")
        guards = measure_guard_skip(run.calls["default"], run.reference_output, settings, device)
        if guards is not None:
            out.what_ifs.append(guards)
        _what_ifs(
            workload,
            out.capture.sites,
            run.reference_output,
            settings,
            device,
            progress,
            out.what_ifs,
        )
    return out


def profile_default(
    call: Callable[[], Any], settings: Settings, device: str, warnings: list[str]
) -> ProfileTrace:
    probe = None
    try:
        probe = harness.break_probe(device)
    except Exception as exc:  # the estimate then omits the probe's prices, and says so
        warnings.append(f"the break probe failed to compile: {first_line(exc)}")
    with filtered_native_stderr():
        return profile_calls(
            call, settings.profile_calls, device, probe=probe, sessions=PROFILE_SESSIONS
        )


def knobs_to_try(sites: tuple[BreakSite, ...]) -> list[tuple[Knob, list[BreakSite]]]:
    """Each config knob that could remove one of the captured breaks, with the sites it may
    remove (from the break kinds alone: nothing has been judged yet)."""
    by_knob: dict[Knob, list[BreakSite]] = {}
    for site in sites:
        knob = knob_for(site)
        if knob is not None:
            by_knob.setdefault(knob, []).append(site)
    return list(by_knob.items())


def _what_ifs(
    workload: Workload,
    sites: tuple[BreakSite, ...],
    reference: object,
    settings: Settings,
    device: str,
    progress: Progress,
    results: list[WhatIf],
) -> None:
    """Measure each knob worth trying, appending to `results` as each finishes."""
    for knob, targets in knobs_to_try(sites):
        progress(f"what-if: measuring {knob.name} ({len(targets)} break(s))...")
        results.append(
            measure_knob(workload, knob, targets, reference, settings, device, baseline_sites=sites)
        )


def judge(
    workload: Workload,
    options: RunOptions,
    device: str,
    measured: Measurements,
    started: float,
) -> Report:
    modes = {m.mode: m for m in measured.modes}
    warnings = list(measured.warnings)
    report = Report(
        workload=WorkloadInfo(
            name=workload.name,
            target=options.target,
            device=device,
            params=tuple((k, json.dumps(v, default=str)) for k, v in options.params),
        ),
        environment=measured.environment or environment.describe(device),
        settings=options.settings,
        modes=tuple(measured.modes),
        graphs=measured.capture.graphs,
        sites=measured.capture.sites,
        what_ifs=tuple(measured.what_ifs),
        recompiles=recompile_advice(measured.capture.recompiles),
        created_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )
    default = modes.get("default")
    if measured.trace is not None and default is not None and default.latency is not None:
        att = attribute(measured.trace, measured.capture, default.latency.median_ms)
        advice = advise(
            att, measured.capture, modes, tuple(measured.what_ifs), options.settings.ignore_share
        )
        warnings += list(att.warnings) + list(advice.warnings)
        report = _with_advice(report, att.attribution, advice)
    return _finish(report, warnings, started)


def judge_partial(
    workload: Workload,
    options: RunOptions,
    device: str,
    measured: Measurements,
    started: float,
) -> Report:
    """The report of an interrupted run, marked incomplete. Judging half a measurement can
    trip over what is missing; then the modes measured so far are reported alone."""
    try:
        report = judge(workload, options, device, measured, started)
    except Exception as exc:
        bare = Measurements(
            measured.modes,
            Capture(),
            warnings=[*measured.warnings, f"analysis of the partial run failed: {first_line(exc)}"],
        )
        report = judge(workload, options, device, bare, started)
    return replace(report, incomplete=True)


def _with_advice(report: Report, attribution: Attribution, advice: Advice) -> Report:
    return replace(
        report,
        breaks=advice.breaks,
        ledger=advice.ledger,
        actions=advice.actions,
        attribution=attribution,
        recompiles=advice.recompiles,
    )


def _finish(report: Report, warnings: list[str], started: float) -> Report:
    return replace(report, warnings=tuple(warnings), wall_s=time.perf_counter() - started)

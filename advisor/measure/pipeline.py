"""Measure one workload in this process: every stage (`advisor.measure.stages`) in order, into a
`Measurements` record. Nothing here judges or formats; an interrupted run (Ctrl-C) raises
`MeasureInterrupted` with what was measured until then."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from advisor.core.artifacts import Capture, Measurements, ProfileTrace
from advisor.core.errors import first_line
from advisor.core.model import (
    BreakSite,
    Candidate,
    Environment,
    ModeResult,
    Note,
    Settings,
    WhatIf,
    WorkloadInfo,
)
from advisor.core.script import ScriptSpec, shown_params
from advisor.measure import environment, harness, lockstep, placement
from advisor.measure.candidates import plan_candidates
from advisor.measure.capture import CaptureSession
from advisor.measure.cpus import fitting_threads, pinned
from advisor.measure.library_option import with_library_options
from advisor.measure.stages import measure_what_if, warm_default_stage, what_if_plan
from advisor.measure.training_variants import training_step
from advisor.measure.workload import Workload

Progress = Callable[[str], None]


@dataclass(frozen=True)
class RunOptions:
    target: str
    device: str = "auto"
    settings: Settings = field(default_factory=Settings)
    modes: tuple[str, ...] = harness.MODE_ORDER
    params: tuple[tuple[str, Any], ...] = ()  # keyword arguments for the target's factory
    script: ScriptSpec | None = None  # the target is the user's script, run as it is


class MeasureInterrupted(KeyboardInterrupt):
    """Ctrl-C while measuring; `measurements` holds what was measured until then."""

    def __init__(self, measurements: Measurements) -> None:
        super().__init__("interrupted")
        self.measurements = measurements


def workload_info(name: str, options: RunOptions, device: str) -> WorkloadInfo:
    if options.script is not None:  # its spec is the run's business; the script's own argv is
        params = shown_params(options.script.argv)
        return WorkloadInfo(name=name, target=options.target, device=device, params=params)
    params = tuple((k, json.dumps(v, default=str)) for k, v in options.params)
    return WorkloadInfo(name=name, target=options.target, device=device, params=params)


@dataclass
class Collected:
    """What measuring has found so far, filled in stage by stage; `freeze` makes the record."""

    info: WorkloadInfo
    settings: Settings
    environment: Environment | None = None
    record: harness.HarnessRecord = field(default_factory=harness.HarnessRecord)
    session: CaptureSession | None = None
    modes: list[ModeResult] | None = None  # set once the modes are measured
    capture: Capture | None = None
    trace: ProfileTrace | None = None
    what_ifs: list[WhatIf] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    candidates: tuple[Candidate, ...] = ()
    created_at: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    started: float = field(default_factory=time.perf_counter)

    def freeze(self, incomplete: bool = False) -> Measurements:
        modes = self.modes if self.modes is not None else self.record.modes_so_far()
        notes = list(self.notes) if self.modes is not None else list(self.record.notes)
        return Measurements(
            workload=self.info,
            environment=self.environment or environment.unknown(),
            settings=self.settings,
            modes=tuple(modes),
            capture=self._capture(notes),
            trace=self.trace,
            what_ifs=tuple(self.what_ifs),
            notes=tuple(notes),
            incomplete=incomplete,
            created_at=self.created_at,
            wall_s=time.perf_counter() - self.started,
            candidates=self.candidates,
        )

    def _capture(self, notes: list[Note]) -> Capture:
        if self.capture is not None or self.session is None:
            return self.capture or Capture()
        try:  # interrupted while compiling: what the session saw so far
            return self.session.result()
        except Exception as exc:  # a compile cut off half-way: report the modes alone
            notes.append(Note("capture_unreadable", detail=first_line(exc)))
            return Capture()


def measure_workload(
    workload: Workload, options: RunOptions, device: str, progress: Progress
) -> Measurements:
    """Every stage on `workload`, with the same threads and CPUs throughout; the environment is
    read first, so its load average is the machine's before we add to it."""
    options, notes = fitted(options)
    collected = Collected(workload_info(workload.name, options, device), options.settings)
    collected.notes += notes
    try:
        with pinned(options.settings.threads):
            collected.environment = environment.describe(device)
            _measure(workload, options, device, progress, collected)
    except KeyboardInterrupt:
        raise MeasureInterrupted(collected.freeze(incomplete=True)) from None
    return collected.freeze()


def fitted(options: RunOptions) -> tuple[RunOptions, list[Note]]:
    """The options with a thread count that fits the CPUs free when measuring begins."""
    threads, notes = fitting_threads(options.settings.threads)
    settings = dataclasses.replace(options.settings, threads=threads)
    return dataclasses.replace(options, settings=settings), notes


def _measure(
    workload: Workload,
    options: RunOptions,
    device: str,
    progress: Progress,
    collected: Collected,
) -> None:
    settings = options.settings
    progress(
        f"measuring {workload.name} on {device}: eager, fullgraph and default "
        "torch.compile (Inductor compiles can take a while)..."
    )
    session = collected.session = CaptureSession()
    harness_options = harness.HarnessOptions(options.modes, observers={"default": lambda: session})
    run = harness.measure(
        workload, settings, device, options=harness_options, record=collected.record
    )
    capture = dataclasses.replace(session.result(), training=training_step(workload))
    sites = with_library_options(capture.sites, workload)
    collected.capture = dataclasses.replace(capture, sites=sites)
    collected.notes += [*run.notes, *collected.capture.notes]
    collected.modes = list(run.modes)
    if not lockstep.agreed(settings, "default" in run.calls):
        collected.notes.append(Note("ranks_disagree", "the default mode"))
        return
    if "default" not in run.calls:
        return
    progress(f"profiling {settings.profile_calls} warm calls of the default mode...")
    warm = warm_default_stage(
        run.calls["default"], run.reference_output, settings, device, collected.notes
    )
    collected.trace = warm.trace
    collected.what_ifs += [warm.guards] if warm.guards is not None else []
    if not settings.what_if:
        return
    sites = collected.capture.sites
    plans = what_if_plan(
        sites, ddp=placement.holds_ddp(workload), training=collected.capture.training
    )
    # every site: whether any skips its frame decides how each what-if is timed
    if not lockstep.agreed(settings, ([p.label for p in plans], [_site_key(s) for s in sites])):
        collected.notes.append(Note("ranks_disagree", "the what-ifs"))
        return
    collected.candidates = plan_candidates(sites, plans)
    for plan in plans:
        progress(f"what-if: measuring {plan.label} ({len(plan.targets)} break(s))...")
        collected.what_ifs.append(
            measure_what_if(workload, plan, run.reference_output, settings, device, sites)
        )


def _site_key(site: BreakSite) -> tuple[str | None, str, int, bool]:
    """A break as ranks compare it: its code, line and whether Dynamo skips its frame."""
    return site.gb_code, site.where.file, site.where.line, site.frame_skipped

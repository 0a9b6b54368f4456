"""Recorded measurements: what the measuring side hands to the judge.

`Capture` (graphs, break sites, frames, recompiles) and `ProfileTrace` (profiled calls as event
trees) are what capture and profile record; `Measurements` is everything measured for one run
(modes, capture, profile, what-ifs, environment, settings, notes), saved as `measurements.json`
beside every report so `advisor judge` can judge it again anywhere, without torch. Every torch
format (profiler event names, guard texts) is read on the measuring side: events carry their
`kind`, recompiles their `cause`. A data-parallel run keeps each rank's modes (`RankTimings`,
defined with the measured records and exported here) beside the main rank's record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from advisor.core.model import (
    BreakSite,
    Candidate,
    Environment,
    GraphRecord,
    ModeResult,
    Note,
    RankTimings,
    RecompileRecord,
    Settings,
    TrainingStep,
    WhatIf,
    WorkloadInfo,
)
from advisor.core.script import ScriptSurvey
from advisor.core.serial import dumps, from_jsonable, load_versioned, to_jsonable

__all__ = [
    "Capture",
    "EventCalibration",
    "FrameRecord",
    "Measurements",
    "ProfileTrace",
    "RankTimings",
    "TraceEvent",
    "TrainingStep",
    "WorkerEnvironment",
    "measurements_from_json",
    "measurements_to_json",
]

MEASUREMENTS_SCHEMA_VERSION = 1
MEASUREMENTS_FILE = "measurements.json"


@dataclass(frozen=True)
class FrameRecord:
    """One compile id as Dynamo saw it (a frame compile; may have no graph, may be skipped)."""

    compile_id: str
    function: str
    file: str
    first_line: int = 0
    ops: int | None = None  # None: no graph was produced (e.g. a resume right before return)
    compile_s: float | None = None
    skipped: bool = False  # Dynamo gave up on the frame and runs it eagerly (e.g. break in a loop)
    break_ids: tuple[str, ...] = ()  # sites met while compiling this frame
    end_break_id: str | None = None  # the site that ends this frame's graph (None: return)
    resume_of: str | None = None  # for a resume function: the function it continues
    resume_line: int | None = None
    resumes: str | None = None  # compile id of the frame this resume function continues
    recompile_reason: str | None = None
    ddp_graphs: int = 0  # the graphs DDP's optimizer split this frame's graph into (0: none)


@dataclass(frozen=True)
class Capture:
    graphs: tuple[GraphRecord, ...] = ()
    sites: tuple[BreakSite, ...] = ()
    recompiles: tuple[RecompileRecord, ...] = ()
    frames: tuple[FrameRecord, ...] = ()
    root_compile_id: str | None = None  # the first frame compiled: the function itself
    notes: tuple[Note, ...] = ()
    torch_version: str = ""
    training: TrainingStep | None = None  # None: no optimizer in the workload

    def frame(self, compile_id: str) -> FrameRecord | None:
        return next((f for f in self.frames if f.compile_id == compile_id), None)

    def site(self, site_id: str | None) -> BreakSite | None:
        return next((s for s in self.sites if s.id == site_id), None)

    @property
    def root_skip_break_id(self) -> str | None:
        """When the function's own frame is skipped, the site that caused it."""
        root = self.frame(self.root_compile_id) if self.root_compile_id else None
        return root.end_break_id if root is not None and root.skipped else None

    def to_json(self) -> str:
        return json.dumps(to_jsonable(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> Capture:
        return from_jsonable(cls, json.loads(text))


# What a profiler event is, as the measuring side classified its name (`TraceEvent.kind`).
EVENT_KINDS = (
    "record",  # the advisor's own record around one call
    "region",  # a compiled region (Dynamo's `Torch-Compiled Region: X/Y`), see `compile_id`
    "lookup",  # guard evaluation before a region (`TorchDynamo Cache Lookup`)
    "graph_call",  # the call of a compiled graph inside a region
    "backward",  # the backward of a compiled forward graph (AOTAutograd), its graph call inside
    "autograd",  # the autograd engine running one backward node
    "optimizer",  # an optimizer's step or zero_grad
    "aten",  # an aten operator
    "memory",  # an allocator event
    "other",  # anything else (Python-side wrappers, prologues)
)


@dataclass(frozen=True)
class TraceEvent:
    name: str
    start_us: float  # relative to the start of the call's record
    duration_us: float
    children: tuple[TraceEvent, ...] = ()
    n_events: int = 1  # profiler events in this subtree, itself included (folded ones too)
    device_us: float = 0.0  # device kernel time under this event (CUDA only)
    kind: str = "other"  # one of EVENT_KINDS
    compile_id: str | None = None  # kind "region": its compile id
    keeps_time: bool = False  # kind "aten": a compute-bound op that runs as the same kernel
    # compiled (matmul, convolution, attention): fusing saves its dispatch, not its time
    # Autograd's sequence number: a compiled forward graph's call and its backward share it.
    sequence_nr: int | None = None

    @property
    def structural(self) -> bool:
        """Record-function style events (regions, lookups, graph calls, wrappers) as opposed to
        aten ops and allocator events; they cost more to profile."""
        return self.kind not in ("aten", "memory")


@dataclass(frozen=True)
class EventCalibration:
    """The profiler's cost per aten event: a tiny op timed with and without the profiler."""

    per_event_us: float
    profiled_us: float  # per op, min over rounds
    bare_us: float
    events_per_op: float
    rounds: int
    ops: int


@dataclass(frozen=True)
class ProfileTrace:
    device: str
    calls: tuple[TraceEvent, ...]  # one per profiled call: the call's record and its subtree
    unprofiled_us: tuple[float, ...] = ()  # wall time of the same calls without the profiler
    calibration: EventCalibration | None = None
    # Calls of a small compiled probe (two tiny graphs split by one break) profiled in the same
    # sessions: the price of one more graph call and of one break's glue (see attribute).
    probe_calls: tuple[TraceEvent, ...] = ()
    probe_unprofiled_us: tuple[float, ...] = ()  # the probe's calls without the profiler
    # One break, unprofiled: the probe with its break minus the same ops unbroken, per call.
    probe_break_us: float | None = None
    # Per profiled call: the median unprofiled time of its session (see `profile.profile_calls`).
    call_unprofiled_us: tuple[float, ...] = ()
    sessions: int = 1
    torch_version: str = ""
    notes: tuple[Note, ...] = ()
    # Minor page faults per unprofiled call, the lowest of the sessions' stretches (None: not
    # read on this platform): the allocator what-if is planned from it.
    minor_faults_per_call: float | None = None

    @property
    def overhead_us_per_event(self) -> float:
        return self.calibration.per_event_us if self.calibration else 0.0

    def to_json(self) -> str:
        return dumps(self, indent=None)

    @classmethod
    def from_json(cls, text: str) -> ProfileTrace:
        return from_jsonable(cls, json.loads(text))


@dataclass(frozen=True)
class WorkerEnvironment:
    """Where an isolated process measured (its threads, CPUs and the load when it began)."""

    task: str  # "eager", "default", "fullgraph", "what_if <knob>"...
    environment: Environment


@dataclass(frozen=True)
class Measurements:
    """Everything measured for one run, before any judgement: all that `judge` reads.

    Written as measurements.json beside the report; a run made on one machine is judged and
    rendered on another (no torch needed there)."""

    workload: WorkloadInfo
    environment: Environment  # where the default mode was measured, read when it began
    settings: Settings
    modes: tuple[ModeResult, ...] = ()
    capture: Capture = field(default_factory=Capture)
    trace: ProfileTrace | None = None  # the default mode's profile
    what_ifs: tuple[WhatIf, ...] = ()
    notes: tuple[Note, ...] = ()  # what the stages noticed while measuring
    workers: tuple[WorkerEnvironment, ...] = ()  # isolated run: each process's environment
    # Data-parallel run (`Settings.ranks` > 1): every rank's modes, side by side. The rest of
    # the record (modes, capture, profile, what-ifs) is the rank that set the step's: the one
    # with the slowest default-mode median.
    ranks: tuple[RankTimings, ...] = ()
    step_rank: int | None = None
    incomplete: bool = False  # interrupted: only what was measured until then
    created_at: str = ""  # when measuring began
    wall_s: float | None = None  # seconds from the start of measuring to its end
    script: ScriptSurvey | None = None  # a script target: what its survey run found
    # the fixes considered for the breaks when the what-ifs were planned, measured or skipped
    candidates: tuple[Candidate, ...] = ()
    schema_version: int = MEASUREMENTS_SCHEMA_VERSION

    def mode(self, name: str) -> ModeResult | None:
        return next((m for m in self.modes if m.mode == name), None)


def measurements_to_json(measurements: Measurements) -> str:
    """Compact (no whitespace, default values left out): the profile's event trees are most
    of it."""
    return dumps(measurements, indent=None, compact=True)


def measurements_from_json(text: str) -> Measurements:
    """Parse saved measurements; a one-line ValueError when they cannot be read."""
    return load_versioned(
        Measurements,
        text,
        MEASUREMENTS_SCHEMA_VERSION,
        "measurements file",
        "written by an older advisor: measure the workload again",
    )

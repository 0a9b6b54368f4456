"""Recorded measurement artifacts: what capture and profile hand to the analysis.

Both are JSON-serialisable so the analysis (attribute, advise) runs on recorded artifacts
without torch: tests keep small ones under tests/data, and an isolated run passes them between
processes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from advisor.model import (
    BreakSite,
    GraphRecord,
    RecompileRecord,
    from_jsonable,
    to_jsonable,
)


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


@dataclass(frozen=True)
class Capture:
    graphs: tuple[GraphRecord, ...] = ()
    sites: tuple[BreakSite, ...] = ()
    recompiles: tuple[RecompileRecord, ...] = ()
    frames: tuple[FrameRecord, ...] = ()
    root_compile_id: str | None = None  # the first frame compiled: the function itself
    warnings: tuple[str, ...] = ()
    torch_version: str = ""

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


@dataclass(frozen=True)
class TraceEvent:
    name: str
    start_us: float  # relative to the start of the call's record
    duration_us: float
    children: tuple[TraceEvent, ...] = ()
    n_events: int = 1  # profiler events in this subtree, itself included (folded ones too)
    device_us: float = 0.0  # device kernel time under this event (CUDA only)


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
    warnings: tuple[str, ...] = ()

    @property
    def overhead_us_per_event(self) -> float:
        return self.calibration.per_event_us if self.calibration else 0.0

    def to_json(self) -> str:
        return json.dumps(to_jsonable(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> ProfileTrace:
        return from_jsonable(cls, json.loads(text))

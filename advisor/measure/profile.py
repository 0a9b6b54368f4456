"""Profile: torch.profiler over warm calls, each call wrapped in a named record.

The result is a small JSON-serialisable `ProfileTrace`: per call, the tree of CPU profiler
events under the call's record (name, start, duration, children; device kernel time per event
on CUDA). Leaf-heavy subtrees (an aten op's internals) are folded into an event count, which is
all the attribution needs from them.

Profiler distortion: every profiler event costs about 1.5-2 µs on this kind of machine, which
inflates tiny compiled regions. `profile_calls` calibrates that cost in the same run: a loop of
a tiny aten op (a fixed number of profiler events per iteration) is timed with and without the
profiler, interleaved, min over rounds (interference only adds time), and the difference per
event is `overhead_us_per_event`. It also records unprofiled per-call times of the workload, so
`attribute` can scale corrected segments to the unprofiled total and report how well the
corrected profile agrees with it. Given a probe (two trivial compiled graphs split by one
break), it profiles the probe's calls in the same sessions, alternating with the workload's,
so the price of one more
graph call and of one break's glue are measured under the same conditions.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from advisor.core.artifacts import EventCalibration, ProfileTrace, TraceEvent
from advisor.core.model import Note
from advisor.measure import torch_adapter as ta
from advisor.measure.environment import minor_faults

if TYPE_CHECKING:
    from advisor.measure.harness import Probe

RECORD_NAME = "advisor::call"
PROBE_RECORD_NAME = "advisor::graph_call_probe"
_CALIBRATION_OPS = 300
_CALIBRATION_ROUNDS = 7
_UNPROFILED_BUDGET_S = 0.25
_UNPROFILED_MAX = 50


# Events whose subtree is kept (the attribution walks them); any other subtree is folded.
_KEPT_KINDS = ("region", "lookup", "graph_call", "backward", "autograd", "optimizer")


def _is_structural(name: str) -> bool:
    return name in (RECORD_NAME, PROBE_RECORD_NAME) or ta.classify_event(name).kind in _KEPT_KINDS


def convert_event(event: Any, origin_us: float, with_device: bool) -> TraceEvent:
    """A profiler FunctionEvent and its subtree as a TraceEvent (times relative to origin).

    Subtrees without any structural event (region, cache lookup, graph call) are folded: the
    event keeps its time and its event count, not its children.
    """
    start, end = ta.event_interval_us(event)
    kids = sorted(ta.event_children(event), key=lambda e: ta.event_interval_us(e)[0])
    converted = [convert_event(k, origin_us, with_device) for k in kids]
    n_events = 1 + sum(c.n_events for c in converted)
    keep = any(_has_structure(c) for c in converted) or _is_structural(event.name)
    return TraceEvent(
        name=str(event.name),
        start_us=round(start - origin_us, 3),
        duration_us=round(end - start, 3),
        children=tuple(converted) if keep else (),
        n_events=n_events,
        device_us=round(ta.event_device_us(event), 3) if with_device else 0.0,
        **classified(str(event.name)),
        sequence_nr=ta.event_sequence_nr(event) if _is_structural(event.name) else None,
    )


def classified(name: str) -> dict[str, Any]:
    """The `TraceEvent` fields that say what an event is (the adapter reads the name)."""
    if name in (RECORD_NAME, PROBE_RECORD_NAME):
        return {"kind": "record"}
    kind = ta.classify_event(name)
    return {"kind": kind.kind, "compile_id": kind.compile_id, "keeps_time": kind.keeps_time}


def _has_structure(event: TraceEvent) -> bool:
    return _is_structural(event.name) or bool(event.children)


def _time_calls(call: Callable[[], Any], n: int, device: str) -> list[float]:
    samples: list[float] = []
    for _ in range(n):
        ta.synchronize(device)
        start = time.perf_counter_ns()
        call()
        ta.synchronize(device)
        samples.append((time.perf_counter_ns() - start) / 1000.0)
    return samples


def calibrate_event_overhead(rounds: int = _CALIBRATION_ROUNDS) -> EventCalibration:
    """Profiler cost per event: a tiny aten op timed with and without the profiler, min over
    rounds (interference only adds time)."""
    profiled, bare, events_per_op = ta.tiny_op_timings(rounds, _CALIBRATION_OPS)
    per_event = max(0.0, (min(profiled) - min(bare)) / max(events_per_op, 1.0))
    return EventCalibration(
        per_event_us=round(per_event, 4),
        profiled_us=round(min(profiled), 4),
        bare_us=round(min(bare), 4),
        events_per_op=round(events_per_op, 3),
        rounds=rounds,
        ops=_CALIBRATION_OPS,
    )


def profile_calls(
    call: Callable[[], Any],
    n_calls: int,
    device: str,
    warmup: int = 2,
    probe: Probe | None = None,
    sessions: int = 1,
    unprofiled: int | None = None,
) -> ProfileTrace:
    """Profile `n_calls` warm calls of `call` (already compiled and warmed up by the caller, or
    by the `warmup` calls here). Each call runs inside `record_function(RECORD_NAME)`; on CUDA
    the device is synchronised inside the record, so a call's record spans its device work.

    The calls are split over `sessions` profiler sessions, each right after its own unprofiled
    timing of the same call: each profiled call is then paired with an unprofiled reference
    from the same moment (`call_unprofiled_us`), so machine drift during the step does not
    land on the split between work and overhead.

    `probe`, when given, is a warm call of the compiled probe; it is profiled in the same
    sessions, alternating with the workload's calls (so both see the same machine state), each
    inside `record_function(PROBE_RECORD_NAME)`.

    `unprofiled`, when given, is how many unprofiled reference calls to time in all, instead
    of a count from a timed call (data-parallel ranks must all call the workload the same
    number of times: its collectives wait on every rank).
    """
    if n_calls < 1:
        raise ValueError("n_calls must be at least 1")
    sessions = max(1, min(sessions, n_calls))
    for _ in range(warmup):
        call()
    ta.synchronize(device)
    wanted = unprofiled if unprofiled is not None else _unprofiled_wanted(call, n_calls, device)
    calibration = calibrate_event_overhead()
    probe_unprofiled: list[float] = []
    probe_break: float | None = None
    if probe is not None:
        probe.call()
        probe_unprofiled = _time_calls(probe.call, 3 * n_calls, device)
        probe_break = time_break(probe, device)
    got = _profile_sessions(call, n_calls, sessions, wanted, device, probe.call if probe else None)
    return ProfileTrace(
        device=device,
        calls=tuple(got.calls),
        unprofiled_us=tuple(round(u, 3) for u in got.unprofiled),
        calibration=calibration,
        probe_calls=tuple(got.probe_calls),
        probe_unprofiled_us=tuple(round(u, 3) for u in probe_unprofiled),
        probe_break_us=round(probe_break, 3) if probe_break is not None else None,
        call_unprofiled_us=tuple(round(u, 3) for u in got.call_refs),
        sessions=sessions,
        torch_version=ta.torch_version(),
        notes=tuple(got.notes),
        minor_faults_per_call=got.steady_faults_per_call(),
    )


def _unprofiled_wanted(call: Callable[[], Any], n_calls: int, device: str) -> int:
    """How many unprofiled calls to time in all: more where calls are cheap, since the median
    must be stable enough to scale to."""
    first = _time_calls(call, min(n_calls, 5), device)
    per_call_s = max(statistics.median(first) / 1e6, 1e-6)
    return max(n_calls, min(_UNPROFILED_MAX, int(_UNPROFILED_BUDGET_S / per_call_s)))


@dataclass
class _Sessions:
    """What the profiler sessions gathered: every unprofiled timing, the recorded calls (and
    probes) and, per recorded call, its session's unprofiled median."""

    unprofiled: list[float] = field(default_factory=list)
    # each stretch of unprofiled calls' minor page faults per call; None: not readable
    fault_rates: list[float] | None = field(default_factory=list)
    calls: list[TraceEvent] = field(default_factory=list)
    probe_calls: list[TraceEvent] = field(default_factory=list)
    call_refs: list[float] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)

    def count_faults(self, before: int | None, after: int | None, calls: int) -> None:
        """Keep one stretch's faults per call (None from then on where a reading is missing)."""
        if self.fault_rates is None or before is None or after is None or calls < 1:
            self.fault_rates = None
        else:
            self.fault_rates.append((after - before) / calls)

    def steady_faults_per_call(self) -> float | None:
        """The lowest stretch's rate: a stretch right after a profiler session faults in again
        the pages the session's buffers took and freed (measured: a text classifier at 0
        faults a call in a plain loop, 21 in the stretch after the first session), while a
        step that faults on every call does so in each stretch."""
        return round(min(self.fault_rates), 2) if self.fault_rates else None


def _profile_sessions(
    call: Callable[[], Any],
    n_calls: int,
    sessions: int,
    wanted: int,
    device: str,
    probe: Callable[[], Any] | None,
) -> _Sessions:
    """`n_calls` recorded calls over `sessions` sessions, each right after its own share of
    the `wanted` unprofiled timings."""
    out = _Sessions()
    activities = ta.profiler_activities(device)
    with_device = len(activities) > 1
    for index in range(sessions):
        in_session = n_calls // sessions + (1 if index < n_calls % sessions else 0)
        before = minor_faults()
        timed = _time_calls(call, max(3, wanted // sessions), device)
        out.count_faults(before, minor_faults(), len(timed))
        out.unprofiled += timed
        got, got_probe = _profile_session(call, in_session, device, activities, probe)
        if len(got) != in_session:
            out.notes.append(
                Note("profile_records_mismatch", values={"expected": in_session, "found": len(got)})
            )
        out.calls += _converted(got, with_device)
        out.probe_calls += _converted(got_probe, with_device)
        out.call_refs += [statistics.median(timed)] * len(got)
    return out


_BREAK_ROUNDS = 15
_BREAK_BLOCK = 100


def time_break(probe: Probe, device: str) -> float:
    """What one break costs, unprofiled: the probe with its break against the same ops unbroken,
    in blocks timed alternately (so drift hits both), the median of the paired differences per
    call."""
    differences = []
    for _ in range(_BREAK_ROUNDS):
        broken = _block_us(probe.call, device)
        unbroken = _block_us(probe.unbroken, device)
        differences.append(broken - unbroken)
    return max(0.0, statistics.median(differences))


def _block_us(call: Callable[[], Any], device: str) -> float:
    ta.synchronize(device)
    start = time.perf_counter_ns()
    for _ in range(_BREAK_BLOCK):
        call()
    ta.synchronize(device)
    return (time.perf_counter_ns() - start) / 1000.0 / _BREAK_BLOCK


def _profile_session(
    call: Callable[[], Any],
    n_calls: int,
    device: str,
    activities: Any,
    probe: Callable[[], Any] | None,
) -> tuple[list[Any], list[Any]]:
    """One profiler session over `n_calls` recorded calls (and probes): the raw root events."""
    events = ta.recorded_session(
        call, n_calls, device, activities, probe, RECORD_NAME, PROBE_RECORD_NAME
    )
    return _roots(events, RECORD_NAME), _roots(events, PROBE_RECORD_NAME)


def _converted(roots: list[Any], with_device: bool) -> list[TraceEvent]:
    """Each root event and its subtree as a TraceEvent, times relative to the root's start."""
    return [convert_event(r, ta.event_interval_us(r)[0], with_device) for r in roots]


def _roots(events: Any, name: str) -> list[Any]:
    roots = [e for e in events if e.name == name]
    roots.sort(key=lambda e: ta.event_interval_us(e)[0])
    return roots

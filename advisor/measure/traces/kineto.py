"""A torch.profiler Chrome/Kineto trace (`export_chrome_trace`, `tensorboard_trace_handler`)
read as the records the advisor's own profile makes: per step, the step's span and the event
tree under it (`TraceEvent`, root kind "record"), as `profile.convert_event` makes one call's.

The file holds no parent links: events nest by time on their thread. The file is read twice,
streamed (`chrome_json`): first the step spans (`ProfilerStep#N`, or the user's own
`record_function` name), then the CPU events on a step's thread that lie inside a step, device
kernels and their launches. Everything else (other threads, time outside the steps, flow
events, metadata) is dropped as it is read, so memory grows with the events kept, not with the
file (device kernels are held as one number per correlation id until their launches are known:
a file may list them before the CPU side). On a CUDA trace a kernel (`cat` kernel, memcpy,
memset) is charged, through its `args.correlation`, to the CPU launch with the same id
(`cudaLaunchKernel`...) and so to every event around that launch (`device_us`), as the
profiler's own `device_time_total` is. Ops on other threads (the autograd engine's, on CUDA)
are left out, as they are from the in-process profile's record of a call.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from advisor.core.artifacts import ProfileTrace, TraceEvent
from advisor.core.errors import AdvisorError, one_line
from advisor.measure import torch_adapter as ta
from advisor.measure.profile import convert_event
from advisor.measure.traces.chrome_json import ChromeTrace

PROFILER_STEP_PREFIX = "ProfilerStep#"
# CPU-side events that can sit in a call's tree: operators, record_function annotations,
# Python functions (with_stack), and CUDA runtime/driver calls (the kernel launches).
_CPU_CATS = frozenset(
    {"cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver"}
)
_LAUNCH_CATS = frozenset({"cuda_runtime", "cuda_driver"})
_DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
_RANK_IN_NAME = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)
# Chrome times are µs with three decimals: ends computed from a start and a duration may miss
# by a nanosecond (or by a float's last digits, for traces with epoch-sized timestamps).
_TOLERANCE_US = 0.002


@dataclass(frozen=True)
class ProfiledStep:
    """One step of the profile: its span and the event tree under it."""

    name: str  # ProfilerStep#N, or the user's step record
    start_us: float  # in the trace's own clock
    call: TraceEvent  # the step's record (kind "record"), times relative to its start
    region_ids: tuple[str, ...]  # the compiled regions run in it, by start (nested ones too)


@dataclass(frozen=True)
class KinetoProfile:
    """One rank's profiler trace, read into steps."""

    path: str
    rank: int | None  # `distributedInfo.rank`, else a rank in the file name
    device: str  # "cuda" where device kernels were recorded, else "cpu"
    steps: tuple[ProfiledStep, ...]
    events_kept: int = 0  # CPU events kept in the steps' trees
    kernels: int = 0  # device kernels charged to a step
    kernels_unmatched: int = 0  # device kernels whose launch lies in no step

    @property
    def compile_ids(self) -> tuple[str, ...]:
        """Every compiled region seen in the steps, in the order first seen."""
        return tuple(dict.fromkeys(cid for step in self.steps for cid in step.region_ids))

    def trace(self) -> ProfileTrace:
        """The steps as the `ProfileTrace` the in-process profile hands the judge (no
        unprofiled timing and no calibration: a file has none)."""
        return ProfileTrace(device=self.device, calls=tuple(s.call for s in self.steps))


_Thread = tuple[Any, Any]  # (pid, tid) as the trace names them


@dataclass(frozen=True)
class _Span:
    """A step's span on its thread."""

    name: str
    start: float
    end: float
    thread: _Thread


@dataclass(frozen=True)
class _Range:
    start: float
    end: float


class _Node:
    """A kept CPU event while the trees are built; it reads like a profiler FunctionEvent
    (`name`, `time_range`, `cpu_children`, `device_time_total`, `sequence_nr`), so
    `convert_event` turns it into a `TraceEvent` the way it turns the profiler's own."""

    __slots__ = (
        "correlation",
        "cpu_children",
        "device_time_total",
        "end",
        "name",
        "sequence_nr",
        "start",
    )

    def __init__(self, name: str, start: float, end: float, correlation: int | None) -> None:
        self.name = name
        self.start = start
        self.end = end
        self.correlation = correlation
        self.sequence_nr = -1
        self.cpu_children: list[_Node] = []
        self.device_time_total = 0.0

    @property
    def time_range(self) -> _Range:
        return _Range(self.start, self.end)


@dataclass
class _Steps:
    """The step spans of each thread, sorted, with the events kept in each step."""

    by_thread: dict[_Thread, list[_Span]] = field(default_factory=dict)
    starts: dict[_Thread, list[float]] = field(default_factory=dict)
    kept: dict[_Span, list[_Node]] = field(default_factory=dict)
    regions: int = 0

    def add(self, thread: _Thread, span: _Span) -> None:
        self.by_thread.setdefault(thread, []).append(span)

    def seal(self) -> None:
        """Sort each thread's spans and keep only the outermost (a step record that recurses)."""
        for thread, spans in self.by_thread.items():
            spans.sort(key=lambda s: (s.start, -s.end))
            outer: list[_Span] = []
            for span in spans:
                if not outer or span.start >= outer[-1].end:
                    outer.append(span)
            self.by_thread[thread] = outer
            self.starts[thread] = [s.start for s in outer]
            for span in outer:
                self.kept[span] = []

    def step_of(self, thread: _Thread, start: float, end: float) -> _Span | None:
        starts = self.starts.get(thread)
        if not starts:
            return None
        i = bisect.bisect_right(starts, start + _TOLERANCE_US) - 1
        if i < 0:
            return None
        span = self.by_thread[thread][i]
        return span if end <= span.end + _tolerance(span.end) else None


def _tolerance(value: float) -> float:
    return max(_TOLERANCE_US, 4 * math.ulp(value))


def read_kineto(
    path: str | Path, step_name: str | None = None, with_python: bool = True
) -> KinetoProfile:
    """A profiler trace's steps. `step_name`: the user's `record_function` name around each
    step, where the trace has no `ProfilerStep#N` spans (no schedule) or another unit is
    wanted. `with_python`: keep `python_function` events (recorded `with_stack`)."""
    trace = ChromeTrace(path)
    steps = _find_steps(trace, step_name)
    cats = _CPU_CATS if with_python else _CPU_CATS - {"python_function"}
    gathered = _gather(trace, steps, cats)
    device = "cuda" if gathered.kernels else "cpu"
    built = [_step(span, steps.kept[span], gathered, device) for span in _ordered(steps)]
    return KinetoProfile(
        path=str(path),
        rank=_rank(trace.header, Path(path)),
        device=device,
        steps=tuple(built),
        events_kept=sum(len(nodes) for nodes in steps.kept.values()),
        kernels=gathered.charged,
        kernels_unmatched=len(gathered.kernels) - gathered.charged,
    )


def _is_step(name: str, step_name: str | None) -> bool:
    return name == step_name if step_name is not None else name.startswith(PROFILER_STEP_PREFIX)


def _complete_events(trace: ChromeTrace) -> Iterator[dict[str, Any]]:
    """The `X` (complete) events that have a name, a start and a duration."""
    for event in trace.events():
        if event.get("ph") != "X":
            continue
        ts, dur = event.get("ts"), event.get("dur")
        if isinstance(ts, (int, float)) and isinstance(dur, (int, float)) and "name" in event:
            yield event


def _find_steps(trace: ChromeTrace, step_name: str | None) -> _Steps:
    """The first pass: the step spans per thread, and whether any compiled region ran."""
    steps = _Steps()
    for event in _complete_events(trace):
        name = str(event["name"])
        if ta.region_compile_id(name) is not None:
            steps.regions += 1
        elif _is_step(name, step_name):
            start = float(event["ts"])
            thread = _thread(event)
            steps.add(thread, _Span(name, start, start + float(event["dur"]), thread))
    where = one_line(str(trace.path))
    if not steps.by_thread:
        wanted = repr(step_name) if step_name else f"{PROFILER_STEP_PREFIX}N"
        raise AdvisorError(
            f"no {wanted} span in profiler trace {where}: profile with a schedule and call "
            "prof.step() each step, or name the record_function around your step"
        )
    if not steps.regions:
        raise AdvisorError(
            f"no compiled region (Torch-Compiled Region: X/Y) in profiler trace {where}: "
            "was the profiled code run under torch.compile, after it compiled?"
        )
    steps.seal()
    return steps


@dataclass
class _Gathered:
    """The second pass's device side: kernel time by correlation id, and the launches kept."""

    kernels: dict[int, float] = field(default_factory=dict)
    launches: dict[int, _Node] = field(default_factory=dict)
    charged: int = 0


def _gather(trace: ChromeTrace, steps: _Steps, cats: frozenset[str]) -> _Gathered:
    """The second pass: CPU events inside a step on the step's thread, and device kernels."""
    out = _Gathered()
    for event in _complete_events(trace):
        cat = event.get("cat")
        args = event.get("args")
        args = args if isinstance(args, dict) else {}
        correlation = args.get("correlation")
        correlation = correlation if isinstance(correlation, int) else None
        if cat in _DEVICE_CATS:
            if correlation is not None:
                out.kernels[correlation] = out.kernels.get(correlation, 0.0) + float(event["dur"])
            continue
        if cat not in cats:
            continue
        start = float(event["ts"])
        end = start + float(event["dur"])
        span = steps.step_of(_thread(event), start, end)
        if span is None or (start, end, event["name"]) == (span.start, span.end, span.name):
            continue
        node = _Node(str(event["name"]), start, end, correlation if cat in _LAUNCH_CATS else None)
        sequence = args.get("Sequence number")
        node.sequence_nr = sequence if isinstance(sequence, int) else -1
        steps.kept[span].append(node)
        if node.correlation is not None:
            out.launches[node.correlation] = node
    return out


def _step(span: _Span, nodes: list[_Node], gathered: _Gathered, device: str) -> ProfiledStep:
    root = _Node(span.name, span.start, span.end, None)  # the step's own event
    _nest(root, nodes)
    gathered.charged += _charge_kernels(root, gathered)
    call = convert_event(root, span.start, with_device=device == "cuda")
    call = replace(call, kind="record", compile_id=None, keeps_time=False, sequence_nr=None)
    return ProfiledStep(span.name, span.start, call, _region_ids(call))


def _nest(root: _Node, nodes: list[_Node]) -> None:
    """Parent each event to the innermost earlier event that contains it (events on one
    thread nest by time). An event that overlaps its neighbour without nesting goes to the
    innermost event that does contain it."""
    nodes.sort(key=lambda n: (n.start, -n.end))
    stack = [root]
    for node in nodes:
        while len(stack) > 1 and node.end > stack[-1].end + _tolerance(stack[-1].end):
            stack.pop()
        stack[-1].cpu_children.append(node)
        stack.append(node)


def _charge_kernels(root: _Node, gathered: _Gathered) -> int:
    """Each event's device time: its launches' kernels and its children's (what the profiler's
    `device_time_total` holds). Returns how many launches found their kernels."""
    charged = 0
    order: list[_Node] = []
    pending = [root]
    while pending:  # iterative: a deep Python stack must not hit the recursion limit
        node = pending.pop()
        order.append(node)
        pending.extend(node.cpu_children)
    for node in reversed(order):  # children before their parents
        own = gathered.kernels.get(node.correlation) if node.correlation is not None else None
        if own is not None:
            charged += 1
        node.device_time_total = (own or 0.0) + sum(c.device_time_total for c in node.cpu_children)
    return charged


def _region_ids(call: TraceEvent) -> tuple[str, ...]:
    found: list[tuple[float, str]] = []
    pending = [call]
    while pending:
        event = pending.pop()
        if event.kind == "region" and event.compile_id is not None:
            found.append((event.start_us, event.compile_id))
        pending.extend(event.children)
    return tuple(cid for _, cid in sorted(found))


def _ordered(steps: _Steps) -> list[_Span]:
    return sorted(steps.kept, key=lambda s: (s.start, s.name))


def _thread(event: dict[str, Any]) -> _Thread:
    return event.get("pid"), event.get("tid")


def _rank(header: dict[str, Any], path: Path) -> int | None:
    info = header.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return int(info["rank"])
    match = _RANK_IN_NAME.search(path.name)
    return int(match.group(1)) if match else None

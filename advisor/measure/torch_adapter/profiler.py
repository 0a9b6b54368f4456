"""torch.profiler: the names of the events Dynamo and Inductor record (regions, cache lookups,
graph calls, aten ops, memory), what each kind of event is, the profiler's activities and
event fields, device synchronisation, a recorded session over the workload's calls, the
tiny-op loop that calibrates the profiler's cost per event, and peak memory over one call.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

# --- profiler event names ---------------------------------------------------------------------

REGION_PREFIX = "Torch-Compiled Region: "
LOOKUP_EVENT = "TorchDynamo Cache Lookup"
# The events that wrap the call of a compiled graph inside a region: Inductor's
# `## Call CompiledFxGraph <key> ##` and AOTAutograd's `CompiledFunction` (grad enabled).
GRAPH_CALL_PREFIXES = ("## Call CompiledFxGraph", "CompiledFunction")
ATEN_PREFIX = "aten::"
MEMORY_EVENT = "[memory]"
# A training step: AOTAutograd's backward of a compiled forward graph (its graph call inside),
# the autograd engine running one backward node, and an optimizer's step and zero_grad.
BACKWARD_EVENT = "CompiledFunctionBackward"
AUTOGRAD_PREFIX = "autograd::engine::evaluate_function: "
OPTIMIZER_PREFIXES = ("Optimizer.step#", "Optimizer.zero_grad#")


# aten ops that Inductor does not fuse but calls as the same library kernel (extern kernels:
# BLAS, convolution, attention, recurrent layers, linear algebra): compiled, they take about the
# time they take in eager, so moving them into a graph saves their dispatch, not their time.
# Everything else (pointwise, reductions, views) is generated code that fuses with its
# neighbours. Names are the profiler's `aten::<op>` events, top-level ops only.
_COMPUTE_BOUND_OPS = frozenset(
    {
        "mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "mv", "addmv", "dot",
        "vdot", "einsum", "tensordot", "_addmm_activation", "_int_mm", "convolution",
        "_convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
        "conv_transpose3d", "scaled_dot_product_attention", "lstm", "gru", "rnn_tanh",
        "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "embedding_bag",
        "_embedding_bag", "cholesky", "cholesky_solve", "triangular_solve", "lu_solve",
    }
)  # fmt: skip
_COMPUTE_BOUND_PREFIXES = (
    "_scaled_dot_product", "_flash_attention", "_efficient_attention", "cudnn_", "miopen_",
    "mkldnn_", "_cudnn_", "_mkldnn_", "linalg_", "_linalg_", "fft_", "_fft_", "_weight_int",
)  # fmt: skip


def keeps_time_compiled(event_name: str) -> bool:
    """Whether an aten op event runs as the same (non-fused) kernel under Inductor."""
    if not event_name.startswith("aten::"):
        return False
    op = event_name[len("aten::") :].split(".", 1)[0]
    return op in _COMPUTE_BOUND_OPS or op.startswith(_COMPUTE_BOUND_PREFIXES)


def region_compile_id(event_name: str) -> str | None:
    if event_name.startswith(REGION_PREFIX):
        return event_name[len(REGION_PREFIX) :].strip()
    return None


def is_graph_call_event(event_name: str) -> bool:
    return event_name.startswith(GRAPH_CALL_PREFIXES)


def is_aten_op(event_name: str) -> bool:
    return event_name.startswith(ATEN_PREFIX)


def is_structural_event(name: str) -> bool:
    """Record-function style events (Dynamo regions, cache lookups, graph calls, wrapper
    prologues, a call's own record) as opposed to aten ops; they cost more to profile."""
    return not is_aten_op(name) and name != MEMORY_EVENT


@dataclass(frozen=True)
class EventKind:
    """What a profiler event's name says it is (see `advisor.core.artifacts.EVENT_KINDS`)."""

    kind: str
    compile_id: str | None = None
    keeps_time: bool = False


def classify_event(name: str) -> EventKind:
    """The kind of a profiler event from its name (the advisor's own records aside)."""
    compile_id = region_compile_id(name)
    if compile_id is not None:
        return EventKind("region", compile_id)
    if name == LOOKUP_EVENT:
        return EventKind("lookup")
    if name == BACKWARD_EVENT:
        return EventKind("backward")
    if name.startswith(AUTOGRAD_PREFIX):
        return EventKind("autograd")
    if name.startswith(OPTIMIZER_PREFIXES):
        return EventKind("optimizer")
    if is_graph_call_event(name):
        return EventKind("graph_call")
    if is_aten_op(name):
        return EventKind("aten", keeps_time=keeps_time_compiled(name))
    if name == MEMORY_EVENT:
        return EventKind("memory")
    return EventKind("other")


def event_sequence_nr(event: Any) -> int | None:
    """The autograd sequence number the profiler gives an op: a compiled forward graph's call
    (`CompiledFunction`) and its backward (`CompiledFunctionBackward`) share it."""
    value = getattr(event, "sequence_nr", -1)
    return int(value) if isinstance(value, int) and value >= 0 else None


def profiler_activities(device: str) -> list[Any]:
    import torch
    from torch.profiler import ProfilerActivity

    activities = [ProfilerActivity.CPU]
    if device.startswith("cuda") and torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    return activities


def event_device_us(event: Any) -> float:
    """Device (kernel) time under a profiler event, 0 where the build records none."""
    for name in ("device_time_total", "cuda_time_total"):
        value = getattr(event, name, None)
        if isinstance(value, (int, float)):
            return float(value)
    return 0.0


def event_children(event: Any) -> list[Any]:
    return list(getattr(event, "cpu_children", []) or [])


def event_interval_us(event: Any) -> tuple[float, float]:
    time_range = event.time_range
    return float(time_range.start), float(time_range.end)


def function_events(prof: Any) -> list[Any]:
    """The profiler's function events (with parent/child links) after a session."""
    return list(prof.profiler.function_events) if prof.profiler is not None else []


def synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        torch.cuda.synchronize(device)


def synchronize_if_initialised() -> None:
    """Wait for the GPU where the process has started CUDA (a script chooses its own device)."""
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


# --- sessions ---------------------------------------------------------------------------------


def recorded_session(
    call: Callable[[], Any],
    n_calls: int,
    device: str,
    activities: Any,
    probe: Callable[[], Any] | None,
    record_name: str,
    probe_record_name: str,
) -> list[Any]:
    """One profiler session over `n_calls` calls, each inside a `record_function(record_name)`
    (and each followed by a probe call in `probe_record_name`), the device synchronised after
    each: the session's function events."""
    import torch
    from torch.profiler import profile

    with profile(activities=activities) as prof:
        # The first profiled call is often an outlier (profiler warm-up): run it unrecorded.
        call()
        synchronize(device)
        for _ in range(n_calls):
            with torch.profiler.record_function(record_name):
                call()
                synchronize(device)
            if probe is not None:
                with torch.profiler.record_function(probe_record_name):
                    probe()
                    synchronize(device)
    return function_events(prof)


class StepProfiler:
    """torch.profiler around a few calls of a user's own run (`advisor observe`): started
    before the calls, each call inside `record_function(record_name)` with the device
    synchronised before the record closes (its kernels belong to its step), then stopped and
    exported as the Chrome trace a user's own profile would be. CUDA activity where a GPU is
    present (the script chooses its own device)."""

    def __init__(self, record_name: str) -> None:
        self.record_name = record_name
        self._prof: Any = None

    def start(self) -> None:
        import torch
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        self._prof = profile(activities=activities)
        self._prof.start()

    @contextlib.contextmanager
    def step(self) -> Iterator[None]:
        import torch

        with torch.profiler.record_function(self.record_name):
            yield
            synchronize_if_initialised()

    def stop(self, export_to: str | None) -> None:
        """Stop recording; write the Chrome trace to `export_to` (None: discard it)."""
        prof, self._prof = self._prof, None
        if prof is None:
            return
        prof.stop()
        if export_to is not None:
            prof.export_chrome_trace(export_to)


def _tiny_ops_us(x: Any, n: int) -> float:
    import torch

    start = time.perf_counter_ns()
    for _ in range(n):
        torch.neg(x)
    return (time.perf_counter_ns() - start) / 1000.0 / n


def tiny_op_timings(rounds: int, ops: int) -> tuple[list[float], list[float], float]:
    """A loop of `ops` tiny aten ops (`neg` of four elements) timed `rounds` times inside one
    CPU profiler session, then `rounds` times without: (profiled µs per op per round, bare µs per
    op per round, profiler events per op)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    x = torch.ones(4)
    _tiny_ops_us(x, ops)
    profiled = []
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _tiny_ops_us(x, 1)
        for _ in range(rounds):
            profiled.append(_tiny_ops_us(x, ops))
    events_per_op = sum(1 for _ in prof.events()) / max(1, rounds * ops + 1)
    bare = [_tiny_ops_us(x, ops) for _ in range(rounds)]
    return profiled, bare, events_per_op


# --- memory -----------------------------------------------------------------------------------

CPU_MEMORY_METHOD = "cpu_profiler"  # peak live bytes over one call, from profiler memory events
CUDA_MEMORY_METHOD = "cuda_allocator"  # torch.cuda.max_memory_allocated over one call


def cpu_peak_call_bytes(call: Callable[[], Any]) -> int:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        call()
    deltas: list[tuple[float, int]] = []
    for event in prof.events():
        delta = getattr(event, "self_cpu_memory_usage", 0) or 0
        if event.name == MEMORY_EVENT:
            delta = getattr(event, "cpu_memory_usage", 0) or 0
        if delta:
            deltas.append((event.time_range.start, int(delta)))
    deltas.sort(key=lambda item: item[0])
    live = peak = 0
    for _, delta in deltas:
        live += delta
        peak = max(peak, live)
    return peak


def cuda_peak_call_bytes(call: Callable[[], Any], device: str) -> int:
    import torch

    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    call()
    torch.cuda.synchronize(device)
    return int(torch.cuda.max_memory_allocated(device))


def profiler_active() -> bool:
    """Whether a torch (autograd) profiler is recording in this process."""
    import torch

    return bool(torch.autograd._profiler_enabled())


# Kineto's native log lines on stderr, e.g. `USDT:2026-11-30 ... profiler_start.cpp:12] ...`.
PROFILER_NATIVE_LOG = re.compile(
    r"^(?:(USDT|INFO|WARNING):\d{4}-\d\d-\d\d .*\.cpp:\d+\]"
    # memory profiling over memory allocated before it began (a script's optimizer state)
    r"|\[W\d{4} [\d:.]+ CPUAllocator\.cpp:\d+\] Memory block of unknown size)"
)

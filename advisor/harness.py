"""The harness: eager, default `torch.compile` and `fullgraph=True`, measured the same way.

Method (after PyTorch's dynamo benchmark harness and `torch.utils.benchmark`):
- eager runs first; if the workload fails uncompiled we stop with that error;
- each compiled mode is compiled after `torch._dynamo.reset()` with a backend object of its own,
  so no mode reuses another's compiled code (Dynamo guards cache entries on backend identity);
  `first_call_s` is compile plus the first run;
- steady state: warm-up calls, then timed blocks of `number` calls with the device synchronised
  before and after each block; the modes are interleaved round by round (rotating which goes
  first) so machine drift hits them all alike; samples are per-call means, summarised by
  median and IQR, raw samples kept in timing order;
- adaptive sampling (like `torch.utils.benchmark`'s `adaptive_autorange`): after `repeats`
  rounds, rounds go on until every mode's median has a 95% interval within `target_ci` of it or
  the time budget runs out; each mode records its blocks, its interval and whether it got there;
- `--threads N` sets torch's threads and pins the process to N CPUs while measuring;
- peak memory is taken over one extra warm call per mode; results are checked against eager
  with dtype-aware tolerances.
The clock and the device synchronisation are injected (`Timer`), so the timing logic is tested
deterministically.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from advisor import cpus, torch_adapter
from advisor.environment import cpu_affinity
from advisor.errors import AdvisorError, first_line
from advisor.model import LatencyStats, ModeError, ModeResult, Settings
from advisor.quiet import filtered_native_stderr
from advisor.stats import latency_stats, relative_half_width
from advisor.workload import Workload

COMPILED_MODES = ("default", "fullgraph")

CompileFn = Callable[[Callable[..., Any], Any, bool], Callable[..., Any]]


class Timer(Protocol):
    def now(self) -> float: ...

    def sync(self) -> None: ...

    def time_block(self, call: Callable[[], Any], number: int) -> float:
        """Seconds taken by `number` calls, the device synchronised before and after."""
        ...


@dataclass
class WallTimer:
    """perf_counter timing with an explicit device synchronisation (a no-op on CPU)."""

    clock: Callable[[], float] = time.perf_counter
    synchronize: Callable[[], None] = lambda: None

    def now(self) -> float:
        return self.clock()

    def sync(self) -> None:
        self.synchronize()

    def time_block(self, call: Callable[[], Any], number: int) -> float:
        self.synchronize()
        start = self.clock()
        for _ in range(number):
            call()
        self.synchronize()
        return self.clock() - start


@dataclass
class CudaEventTimer:
    """CUDA events around each block: device time from the first launch to the last kernel."""

    device: str

    def now(self) -> float:
        torch.cuda.synchronize(self.device)
        return time.perf_counter()

    def sync(self) -> None:
        torch.cuda.synchronize(self.device)

    def time_block(self, call: Callable[[], Any], number: int) -> float:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(self.device)
        start.record()
        for _ in range(number):
            call()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3


def timer_for(device: str) -> Timer:
    if device.startswith("cuda"):
        return CudaEventTimer(device)
    return WallTimer()


def resolve_device(requested: str) -> str:
    """'auto' picks CUDA when present; an explicit CUDA request without a GPU is an error."""
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda"):
        if not torch.cuda.is_available():
            raise AdvisorError(f"--device {requested} requested but no CUDA device is available")
        return requested
    if requested == "cpu":
        return requested
    raise AdvisorError(f"unknown device '{requested}' (use cpu, cuda, cuda:N or auto)")


@dataclass
class ModeRun:
    """A compiled or eager callable kept warm for timing, profiling and what-ifs."""

    mode: str
    call: Callable[[], Any] | None
    result: ModeResult
    output: Any = None
    backend: torch_adapter.InductorBackend | None = None


@dataclass
class HarnessRun:
    modes: list[ModeResult]
    calls: dict[str, Callable[[], Any]] = field(default_factory=dict)
    reference_output: Any = None
    warnings: list[str] = field(default_factory=list)


@dataclass
class HarnessRecord:
    """What `measure` has measured so far, filled in as it goes, so that a run interrupted
    (Ctrl-C) can still report the modes measured until then."""

    first_calls: dict[str, ModeResult] = field(default_factory=dict)
    samples: dict[str, list[float]] = field(default_factory=dict)  # per-call seconds, by mode
    number: dict[str, int] = field(default_factory=dict)  # calls per timed block, by mode
    warnings: list[str] = field(default_factory=list)

    def modes_so_far(self) -> list[ModeResult]:
        """Each mode that got through its first call, with the timing rounds done so far."""
        out = []
        for mode in ("eager", "default", "fullgraph"):
            result = self.first_calls.get(mode)
            if result is None:
                continue
            samples = self.samples.get(mode)
            if samples and mode in self.number:
                result = _replace(result, latency=latency_stats(samples, self.number[mode]))
            out.append(result)
        return out


Observer = Callable[[], AbstractContextManager[Any]]


def measure(
    workload: Workload,
    settings: Settings,
    device: str,
    timer: Timer | None = None,
    modes: tuple[str, ...] = ("eager", "default", "fullgraph"),
    observers: Mapping[str, Observer] | None = None,
    compile_fn: CompileFn | None = None,
    memory: bool = True,
    timed: tuple[str, ...] | None = None,
    record: HarnessRecord | None = None,
) -> HarnessRun:
    """Run every mode and return their results plus the warm callables.

    `observers[mode]()` is entered around that mode's compile, first call and warm-up (the
    capture stage hooks in here, so capture sees the very compile that is benchmarked).
    `compile_fn(fn, backend, fullgraph)` defaults to `torch.compile`; tests inject a cheaper one.
    `timed` limits the steady-state timing to those modes (default: every mode that ran; an
    isolated run times one mode per process). `record` is filled in as results come.
    """
    _validate(settings)
    timer = timer or timer_for(device)
    observers = observers or {}
    compile_fn = compile_fn or torch_adapter.compile_mode
    record = record if record is not None else HarnessRecord()
    warnings = record.warnings

    with pinned(settings.threads):
        eager = _first_call_eager(workload, timer)
        record.first_calls["eager"] = eager.result
        reference = _reference_output(workload, eager.output, warnings)
        runs: dict[str, ModeRun] = {"eager": eager}
        # fullgraph is compiled before default so that default's compile ids stay the live
        # ones: the profile of the default mode is joined to exactly the graphs captured here.
        for mode in ("fullgraph", "default"):
            if mode in modes:
                runs[mode] = _first_call_compiled(
                    mode, workload, timer, settings, compile_fn, observers.get(mode), reference
                )
                record.first_calls[mode] = runs[mode].result
        ordered = [runs[m] for m in ("eager", "default", "fullgraph") if m in runs]
        live = [
            r
            for r in ordered
            if r.call is not None and r.result.status == "ok" and (timed is None or r.mode in timed)
        ]
        timing = interleaved_samples(
            [(r.mode, r.call) for r in live if r.call is not None], settings, timer, record
        )
        warnings.extend(timing.warnings)
        reasons = torch_adapter.recompile_reasons()
        results: list[ModeResult] = []
        for run in ordered:
            result = run.result
            if run.mode in timing.stats:
                result = _replace(result, latency=timing.stats[run.mode])
                if memory and run.call is not None:
                    peak, method = _peak_memory(run.call, device)
                    result = _replace(result, peak_memory_bytes=peak, memory_method=method)
            if run.backend is not None:
                result = _replace(result, recompiles=_count_recompiles(run.backend, reasons))
            results.append(result)
    return HarnessRun(
        modes=results,
        calls={r.mode: r.call for r in live if r.call is not None and r.mode in timing.stats},
        reference_output=reference,  # NO_REFERENCE when eager does not reproduce its output
        warnings=list(warnings),
    )


def _validate(settings: Settings) -> None:
    if settings.repeats < 1:
        raise AdvisorError(f"repeats must be at least 1 (got {settings.repeats})")
    if settings.warmup < 0:
        raise AdvisorError(f"warm-up must be zero or more (got {settings.warmup})")
    if settings.budget_s <= 0:
        raise AdvisorError(f"the time budget must be positive (got {settings.budget_s})")
    if settings.threads is not None and settings.threads < 1:
        raise AdvisorError(f"threads must be at least 1 (got {settings.threads})")


@contextlib.contextmanager
def pinned(threads: int | None) -> Iterator[tuple[int, ...]]:
    """Run with `threads` torch intra-op threads and, where the platform allows, the process
    pinned to that many CPUs; both restored on exit. Yields the CPUs the process may run on.

    Pinning keeps the scheduler from moving the threads between cores mid-measurement (cold
    caches, another core's load). The last CPUs no other advisor run holds are taken (the first
    ones tend to serve more interrupts); when too few are free the process is not pinned."""
    if threads is None:
        yield cpu_affinity()
        return
    previous_threads = torch.get_num_threads()
    previous_cpus = cpu_affinity()
    torch.set_num_threads(threads)
    claim = (
        cpus.claimed(previous_cpus, threads)
        if len(previous_cpus) > threads
        else contextlib.nullcontext(None)
    )
    try:
        with claim as free:
            if free is not None:
                _set_affinity(free)
            yield cpu_affinity()
    finally:
        torch.set_num_threads(previous_threads)
        if previous_cpus and cpu_affinity() != previous_cpus:
            _set_affinity(previous_cpus)


def _set_affinity(cpus: tuple[int, ...]) -> None:
    with contextlib.suppress(AttributeError, OSError):  # not on Linux: nothing to pin
        os.sched_setaffinity(0, cpus)


def _first_call_eager(workload: Workload, timer: Timer) -> ModeRun:
    timer.sync()
    start = timer.now()
    try:
        output = workload()
    except Exception as exc:
        raise AdvisorError(
            f"the workload fails in eager mode: {type(exc).__name__}: {first_line(exc)}"
        ) from exc
    timer.sync()
    first = timer.now() - start
    return ModeRun(
        "eager", workload.__call__, ModeResult("eager", "ok", first_call_s=first), output
    )


NO_REFERENCE = object()  # eager's output is not reproducible: nothing to compare against


def eager_reference(workload: Workload, warnings: list[str]) -> Any:
    """Eager's output to check compiled variants against, as `measure` takes it (two eager
    calls; NO_REFERENCE when they differ), for a process that measures a what-if alone."""
    eager = _first_call_eager(workload, WallTimer())
    return _reference_output(workload, eager.output, warnings)


def _reference_output(workload: Workload, first: Any, warnings: list[str]) -> Any:
    """Eager's output to check compiled modes against, if eager reproduces it on a second call.

    A workload that updates state on each call (a training step) or draws random numbers
    (dropout in train mode) gives a different output every call, so a mismatch would say
    nothing about the compiled code; its modes get no verdict on matching, and a warning."""
    try:
        again = workload()
    except Exception as exc:
        raise AdvisorError(
            f"the workload fails in eager mode on its second call: {type(exc).__name__}: "
            f"{first_line(exc)}"
        ) from exc
    same, _ = compare_outputs(first, again)
    if same:
        return first
    warnings.append(
        "eager gives a different output on each call (the workload updates state, e.g. a "
        "training step, or draws random numbers): compiled outputs were not compared with eager"
    )
    return NO_REFERENCE


def _first_call_compiled(
    mode: str,
    workload: Workload,
    timer: Timer,
    settings: Settings,
    compile_fn: CompileFn,
    observer: Observer | None,
    reference: Any,
) -> ModeRun:
    torch_adapter.reset_dynamo()
    backend = torch_adapter.InductorBackend(mode)
    call = compiled_call(workload, backend, mode == "fullgraph", compile_fn)

    with observer() if observer is not None else contextlib.nullcontext():
        timer.sync()
        start = timer.now()
        try:
            output = call()
        except Exception as exc:  # a compile failure is a finding, not a crash
            info = torch_adapter.describe_compile_failure(exc)
            error = ModeError(
                type=info.type,
                message=info.message,
                gb_code=info.gb_code,
                gb_type=info.gb_type,
                file=info.file,
                line=info.line,
                code=info.code,
            )
            return ModeRun(mode, None, ModeResult(mode, "failed", error=error), backend=backend)
        timer.sync()
        first = timer.now() - start
        # Warm-up inside the observer: recompiles triggered by later calls belong to this mode.
        for _ in range(settings.warmup):
            call()
    matches, max_diff = (
        compare_outputs(reference, output) if reference is not NO_REFERENCE else (None, None)
    )
    result = ModeResult(
        mode,
        "ok",
        first_call_s=first,
        matches_eager=matches,
        max_abs_diff=max_diff,
        graph_count=len(backend.compile_ids),
    )
    return ModeRun(mode, call, result, output, backend)


def compiled_call(
    workload: Workload, backend: Any, fullgraph: bool, compile_fn: CompileFn | None = None
) -> Callable[[], Any]:
    """One call of the workload compiled with `backend`: its callable compiled, or, with
    `compiled_module`, the callable run eagerly around that module compiled in place."""
    compile_fn = compile_fn or torch_adapter.compile_mode
    module = workload.compiled_module
    if module is None:
        compiled = compile_fn(workload.fn, backend, fullgraph)
        return lambda: compiled(*workload.args, **workload.kwargs)
    compiled_impl = compile_fn(torch_adapter.module_call_impl(module), backend, fullgraph)

    def call() -> Any:
        torch_adapter.use_compiled_call(module, compiled_impl)
        try:
            return workload()
        finally:
            torch_adapter.use_compiled_call(module, None)

    return call


@dataclass(frozen=True)
class Probe:
    """Warm calls of the probe with its break and without (see `break_probe`)."""

    call: Callable[[], Any]
    unbroken: Callable[[], Any]


def break_probe(device: str) -> Probe:
    """The probe (two tiny graphs split by one break, and the same ops unbroken) compiled like
    the workload's default mode (Inductor, a backend object of its own), without resetting
    Dynamo so the workload's compiled code stays live. Timed against each other it prices one
    break; profiled beside the workload, one more graph call and one break's glue (see
    `attribute.probe_prices`)."""
    backend = torch_adapter.InductorBackend("probe")
    broken, unbroken = torch_adapter.break_probe_functions()
    x = torch.ones(8, device=device)
    compiled = torch_adapter.compile_mode(broken, backend, False)
    compiled_unbroken = torch_adapter.compile_mode(unbroken, backend, False)
    probe = Probe(lambda: compiled(x), lambda: compiled_unbroken(x))
    with filtered_native_stderr():
        for _ in range(2):
            probe.call()
            probe.unbroken()
    return probe


@dataclass
class Timing:
    """What `interleaved_samples` measured: each label's latency (samples in timing order,
    blocks taken, the median's interval and whether it reached the target), and warnings."""

    stats: dict[str, LatencyStats]
    warnings: list[str] = field(default_factory=list)


MIN_ROUNDS = 3  # whatever the budget: a median and a spread need a few samples
MAX_ROUNDS = 10_000  # a bound on rounds whatever the budget (a clock that barely moves)


def interleaved_samples(
    runs: list[tuple[str, Callable[[], Any]]],
    settings: Settings,
    timer: Timer,
    record: HarnessRecord | None = None,
) -> Timing:
    """Warm up each callable, calibrate its block size, then time them round-robin.

    Every round times one block of each callable, rotating which goes first, so drift hits them
    alike; all callables stay in every round until each one's median has a 95% interval within
    `settings.target_ci` of it (at least `settings.repeats` rounds), or the next round, at the
    mean length of the rounds so far, would exceed `settings.budget_s` (judged from the rounds
    themselves, so one slow early block does not cut the minimum). Keeping them together keeps
    the rounds balanced: a callable that settled early still shares every later round's drift
    with the others. With `record`, the block sizes and samples are kept in it as they are
    taken (an interrupted run keeps the rounds done).
    """
    warnings: list[str] = []
    live = _Live(list(runs), warnings)
    number = _block_sizes(live, settings, timer)
    samples: dict[str, list[float]] = {label: [] for label, _ in live.runs}
    if record is not None:
        record.number.update(number)
        record.samples.update(samples)
        samples = record.samples
    start = timer.now()
    rounds = 0
    while live.runs and not _enough(samples, rounds, timer.now() - start, settings):
        shift = rounds % len(live.runs)
        for label, call in live.runs[shift:] + live.runs[:shift]:
            try:
                elapsed = timer.time_block(call, number[label])
            except Exception as exc:
                live.drop(label, exc, "while being timed")
                samples.pop(label, None)
                continue
            samples[label].append(elapsed / number[label])
        rounds += 1
    if live.runs and rounds < settings.repeats:
        warnings.append(
            f"time budget {settings.budget_s:g}s allowed {rounds} of {settings.repeats} "
            "rounds; raise --budget for more samples"
        )
    target = settings.target_ci if settings.target_ci > 0 else None
    stats = {
        label: latency_stats(values, number[label], target)
        for label, values in samples.items()
        if values
    }
    warnings.extend(_target_warnings(stats, settings))
    return Timing(stats, warnings)


@dataclass
class _Live:
    """The callables still being timed; one that fails is dropped with a warning."""

    runs: list[tuple[str, Callable[[], Any]]]
    warnings: list[str]

    def drop(self, label: str, exc: Exception, when: str) -> None:
        # A mode can fail after its first calls: a recompile limit hit under fullgraph=True,
        # or a mode compiled before the last `reset` that recompiles here and finds its frame
        # marked skipped by a later mode's compile ("found no compiled frames"). It keeps its
        # first-call result but loses its timing; the other modes go on.
        self.warnings.append(
            f"{label}: failed {when} ({type(exc).__name__}: {first_line(exc)}); not timed"
        )
        self.runs[:] = [r for r in self.runs if r[0] != label]


def _block_sizes(live: _Live, settings: Settings, timer: Timer) -> dict[str, int]:
    """Warm each callable up and pick its calls per block: enough that a block lasts
    `min_block_s` (short blocks measure the clock and the loop more than the call)."""
    number: dict[str, int] = {}
    for label, call in list(live.runs):
        try:
            for _ in range(settings.warmup):
                call()
            single = max(timer.time_block(call, 1), 1e-7)
        except Exception as exc:
            live.drop(label, exc, "during warm-up")
            continue
        # (the tiny slack keeps float noise from adding a call: 2 ms / 1 ms is 2 blocks, not 3)
        number[label] = max(1, min(10_000, math.ceil(settings.min_block_s / single - 1e-6)))
    return number


def _enough(
    samples: Mapping[str, list[float]], rounds: int, elapsed_s: float, settings: Settings
) -> bool:
    """Whether to stop after `rounds` rounds that took `elapsed_s`: at least MIN_ROUNDS (or
    `repeats` if fewer), then `repeats` while the budget lasts, then until every median
    reached the target while it lasts."""
    if rounds < min(MIN_ROUNDS, settings.repeats):
        return False
    # the next round, at the mean round's length, would pass the budget (slack for float noise)
    if rounds >= MAX_ROUNDS or elapsed_s * (rounds + 1) / rounds > settings.budget_s + 1e-9:
        return True
    if rounds < settings.repeats:
        return False
    if settings.target_ci <= 0:
        return True
    return all(relative_half_width(v) <= settings.target_ci for v in samples.values() if v)


def _target_warnings(stats: Mapping[str, LatencyStats], settings: Settings) -> list[str]:
    out = []
    for label, lat in stats.items():
        if lat.target_met is False:
            out.append(
                f"{label}: the 95% interval of the median is ±{(lat.relative_ci or 0) * 100:.1f}% "
                f"after {lat.n} blocks, short of the ±{settings.target_ci * 100:g}% target (time "
                f"budget {settings.budget_s:g}s); its numbers are uncertain: raise --budget or "
                "measure on a quieter machine"
            )
    return out


def _peak_memory(call: Callable[[], Any], device: str) -> tuple[int, str]:
    if device.startswith("cuda"):
        return torch_adapter.cuda_peak_call_bytes(call, device), torch_adapter.CUDA_MEMORY_METHOD
    with filtered_native_stderr():
        return torch_adapter.cpu_peak_call_bytes(call), torch_adapter.CPU_MEMORY_METHOD


def _count_recompiles(backend: torch_adapter.InductorBackend, reasons: Mapping[str, str]) -> int:
    count = 0
    for cid in backend.compile_ids:
        reason = reasons.get(cid)
        if reason and not torch_adapter.is_backend_switch(reason):
            count += 1
    return count


# --- result check ----------------------------------------------------------------------------

# (rtol, atol) per dtype; looser than torch.testing's defaults because compiled kernels fuse and
# reorder floating-point work (the same tolerances PyTorch's dynamo benchmarks use in spirit).
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-4),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float16: (1e-3, 1e-3),
}


def compare_outputs(expected: Any, actual: Any) -> tuple[bool, float | None]:
    """Whether `actual` matches `expected` (nested tensors/containers), and the max abs diff."""
    exp_leaves, exp_spec = torch_adapter.tree_leaves_and_spec(expected)
    act_leaves, act_spec = torch_adapter.tree_leaves_and_spec(actual)
    if exp_spec != act_spec:
        return False, None
    worst: float | None = None
    ok = True
    for exp, act in zip(exp_leaves, act_leaves, strict=True):
        if isinstance(exp, torch.Tensor) and isinstance(act, torch.Tensor):
            if exp.shape != act.shape or exp.dtype != act.dtype:
                return False, None
            if exp.numel() == 0:
                continue
            if exp.dtype.is_floating_point or exp.dtype.is_complex:
                rtol, atol = TOLERANCES.get(exp.dtype, (1e-4, 1e-4))
                diff = (exp.detach().double() - act.detach().double().to(exp.device)).abs()
                limit = atol + rtol * exp.detach().double().abs()
                nan_match = torch.isnan(exp) == torch.isnan(act.to(exp.device))
                ok = (
                    ok
                    and bool(nan_match.all())
                    and bool(((diff <= limit) | torch.isnan(diff)).all())
                )
                finite = diff[~torch.isnan(diff)]
                if finite.numel():
                    worst = max(worst or 0.0, float(finite.max()))
            else:
                ok = ok and bool(torch.equal(exp.cpu(), act.cpu()))
                worst = max(worst or 0.0, 0.0 if torch.equal(exp.cpu(), act.cpu()) else math.inf)
        elif exp != act:
            ok = False
    if worst is not None and math.isinf(worst):
        worst = None
    return ok, worst


def _replace(result: ModeResult, **changes: Any) -> ModeResult:
    return dataclasses.replace(result, **changes)

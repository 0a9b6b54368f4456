"""The harness: eager, default `torch.compile` and `fullgraph=True`, measured the same way.

- eager runs first; if the workload fails uncompiled we stop with that error;
- each compiled mode is compiled after `torch._dynamo.reset()` with a backend object of its own,
  so no mode reuses another's compiled code (Dynamo guards cache entries on backend identity);
  `first_call_s` is compile plus the first run;
- steady state: the modes timed interleaved (`advisor.measure.timing`);
- peak memory is taken over one extra warm call per mode; results are checked against eager
  (`advisor.measure.torch_adapter.outputs`).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from advisor.core.errors import AdvisorError, first_line
from advisor.core.model import ModeResult, Note, Settings
from advisor.core.stats import latency_stats
from advisor.measure import torch_adapter
from advisor.measure.cpus import pinned
from advisor.measure.quiet import filtered_native_stderr
from advisor.measure.timing import SampleLog, Timer, WallTimer, interleaved_samples, timer_for
from advisor.measure.torch_adapter import compare_outputs
from advisor.measure.workload import Workload

# torch is imported with the harness, as it always was (see `torch_adapter.import_torch`).
torch_adapter.import_torch()

MODE_ORDER = ("eager", "default", "fullgraph")

CompileFn = Callable[[Callable[..., Any], Any, bool], Callable[..., Any]]


def resolve_device(requested: str) -> str:
    """'auto' picks CUDA when present; an explicit CUDA request without a GPU is an error."""
    if requested == "auto":
        return "cuda" if torch_adapter.cuda_available() else "cpu"
    if requested.startswith("cuda"):
        if not torch_adapter.cuda_available():
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
    # the outputs of its first two calls, kept for a training step (whose arms are compared
    # by them: `advisor.measure.first_steps`)
    first_outputs: tuple[Any, ...] = ()


@dataclass
class HarnessRun:
    modes: list[ModeResult]
    calls: dict[str, Callable[[], Any]] = field(default_factory=dict)
    reference_output: Any = None
    notes: list[Note] = field(default_factory=list)


@dataclass
class HarnessRecord:
    """What `measure` has measured so far, filled in as it goes, so that a run interrupted
    (Ctrl-C) can still report the modes measured until then."""

    first_calls: dict[str, ModeResult] = field(default_factory=dict)
    log: SampleLog = field(default_factory=SampleLog)
    notes: list[Note] = field(default_factory=list)

    def modes_so_far(self) -> list[ModeResult]:
        """Each mode that got through its first call, with the timing rounds done so far."""
        out = []
        for mode in MODE_ORDER:
            result = self.first_calls.get(mode)
            if result is None:
                continue
            samples = self.log.samples.get(mode)
            if samples and mode in self.log.number:
                latency = latency_stats(samples, self.log.number[mode])
                result = dataclasses.replace(result, latency=latency)
            out.append(result)
        return out


Observer = Callable[[], AbstractContextManager[Any]]


@dataclass(frozen=True)
class HarnessOptions:
    """How `measure` runs the modes: which ones, which are timed (default: all that ran; an
    isolated run times one mode per process), what is entered around a mode's compile (the
    capture hooks in there), and the compile function (tests inject a cheaper one)."""

    modes: tuple[str, ...] = MODE_ORDER
    timed: tuple[str, ...] | None = None
    observers: Mapping[str, Observer] = field(default_factory=dict)
    compile_fn: CompileFn | None = None
    memory: bool = True


def measure(
    workload: Workload,
    settings: Settings,
    device: str,
    timer: Timer | None = None,
    options: HarnessOptions | None = None,
    record: HarnessRecord | None = None,
) -> HarnessRun:
    """Run every mode and return their results plus the warm callables. `record` is filled in
    as results come (an interrupted run keeps what it holds)."""
    _validate(settings)
    timer = timer or timer_for(device)
    options = options or HarnessOptions()
    record = record if record is not None else HarnessRecord()
    with pinned(settings.threads):
        runs, reference = _first_calls(workload, settings, timer, options, record)
        live = [
            r
            for r in runs
            if r.call is not None
            and r.result.status == "ok"
            and (options.timed is None or r.mode in options.timed)
        ]
        timing = interleaved_samples(
            [(r.mode, r.call) for r in live if r.call is not None], settings, timer, record.log
        )
        record.notes.extend(timing.notes)
        results = _results(runs, timing.stats, device, options.memory)
    return HarnessRun(
        modes=results,
        calls={r.mode: r.call for r in live if r.call is not None and r.mode in timing.stats},
        reference_output=reference,  # NO_REFERENCE when eager does not reproduce its output
        notes=list(record.notes),
    )


def _first_calls(
    workload: Workload,
    settings: Settings,
    timer: Timer,
    options: HarnessOptions,
    record: HarnessRecord,
) -> tuple[list[ModeRun], Any]:
    """Eager, then each compiled mode: compiled, first call, warm-up (in report order)."""
    compile_fn = options.compile_fn or torch_adapter.compile_mode
    eager = _first_call_eager(workload, timer)
    record.first_calls["eager"] = eager.result
    reference = _reference_output(workload, eager.output, record.notes)
    runs: dict[str, ModeRun] = {"eager": eager}
    # fullgraph is compiled before default so that default's compile ids stay the live ones:
    # the profile of the default mode is joined to exactly the graphs captured here.
    for mode in ("fullgraph", "default"):
        if mode in options.modes:
            observer = options.observers.get(mode)
            runs[mode] = _first_call_compiled(
                mode, workload, timer, settings, compile_fn, observer, reference
            )
            record.first_calls[mode] = runs[mode].result
    return [runs[m] for m in MODE_ORDER if m in runs], reference


def _results(
    runs: list[ModeRun], stats: Mapping[str, Any], device: str, memory: bool
) -> list[ModeResult]:
    """Each mode's result with its latency, peak memory and recompiles."""
    reasons = torch_adapter.recompile_reasons()
    results: list[ModeResult] = []
    for run in runs:
        result = run.result
        if run.mode in stats:
            result = dataclasses.replace(result, latency=stats[run.mode])
            if memory and run.call is not None:
                peak, method = _peak_memory(run.call, device)
                result = dataclasses.replace(result, peak_memory_bytes=peak, memory_method=method)
        if run.backend is not None:
            recompiles = _count_recompiles(run.backend, reasons)
            result = dataclasses.replace(result, recompiles=recompiles)
        results.append(result)
    return results


def _validate(settings: Settings) -> None:
    if settings.repeats < 1:
        raise AdvisorError(f"repeats must be at least 1 (got {settings.repeats})")
    if settings.warmup < 0:
        raise AdvisorError(f"warm-up must be zero or more (got {settings.warmup})")
    if settings.budget_s <= 0:
        raise AdvisorError(f"the time budget must be positive (got {settings.budget_s})")
    if settings.threads is not None and settings.threads < 1:
        raise AdvisorError(f"threads must be at least 1 (got {settings.threads})")


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


def prepare_mode(
    workload: Workload, settings: Settings, device: str, mode: str, training: bool = False
) -> tuple[ModeRun, Any, list[Note]]:
    """One mode alone, warm, for a worker of the replicated protocol: eager's reference first
    (two eager calls, as `measure` takes it), then, for a compiled mode, its compile, first
    call and warm-up. Returns the run, the reference and the notes.

    A training step (`training`) skips eager's reference before a compiled mode: each call
    updates the weights, so eager's output would not reproduce anyway, and the mode's own
    first calls, from the model as built, are what its arm is compared by (its
    `first_outputs`)."""
    timer = timer_for(device)
    notes: list[Note] = []
    if mode == "eager" or not training:
        eager = _first_call_eager(workload, timer)
        reference, again = _reference_and_second(workload, eager.output, notes)
        if mode == "eager":
            for _ in range(settings.warmup):
                workload()
            kept = (eager.output, again) if training else ()
            return dataclasses.replace(eager, first_outputs=kept), reference, notes
    else:
        reference = NO_REFERENCE
    compile_fn = torch_adapter.compile_mode
    run = _first_call_compiled(
        mode, workload, timer, settings, compile_fn, None, reference, keep_first=training
    )
    return run, reference, notes


def peak_memory(call: Callable[[], Any], device: str) -> tuple[int, str]:
    """Peak memory of one warm call, and how it was taken."""
    return _peak_memory(call, device)


def count_recompiles(backend: torch_adapter.InductorBackend) -> int:
    return _count_recompiles(backend, torch_adapter.recompile_reasons())


def eager_reference(workload: Workload, notes: list[Note]) -> Any:
    """Eager's output to check compiled variants against, as `measure` takes it (two eager
    calls; NO_REFERENCE when they differ), for a process that measures a what-if alone."""
    eager = _first_call_eager(workload, WallTimer())
    return _reference_output(workload, eager.output, notes)


def _reference_output(workload: Workload, first: Any, notes: list[Note]) -> Any:
    """Eager's output to check compiled modes against, if eager reproduces it on a second call.

    A workload that updates state on each call (a training step) or draws random numbers
    (dropout in train mode) gives a different output every call, so a mismatch would say
    nothing about the compiled code; its modes get no verdict on matching, and a warning."""
    return _reference_and_second(workload, first, notes)[0]


def _reference_and_second(workload: Workload, first: Any, notes: list[Note]) -> tuple[Any, Any]:
    """`_reference_output`, and the second call's output."""
    try:
        again = workload()
    except Exception as exc:
        raise AdvisorError(
            f"the workload fails in eager mode on its second call: {type(exc).__name__}: "
            f"{first_line(exc)}"
        ) from exc
    if compare_outputs(first, again).matches:
        return first, again
    notes.append(Note("eager_not_reproducible"))
    return NO_REFERENCE, again


def _first_call_compiled(
    mode: str,
    workload: Workload,
    timer: Timer,
    settings: Settings,
    compile_fn: CompileFn,
    observer: Observer | None,
    reference: Any,
    keep_first: bool = False,
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
            error = torch_adapter.describe_compile_failure(exc)
            return ModeRun(mode, None, ModeResult(mode, "failed", error=error), backend=backend)
        timer.sync()
        first = timer.now() - start
        # Warm-up inside the observer: recompiles triggered by later calls belong to this mode.
        second: tuple[Any, ...] = ()
        for index in range(settings.warmup):
            warm = call()
            if keep_first and index == 0:
                second = (warm,)
    check = compare_outputs(reference, output) if reference is not NO_REFERENCE else None
    result = ModeResult(
        mode,
        "ok",
        first_call_s=first,
        matches_eager=check.matches if check else None,
        max_abs_diff=check.max_abs_diff if check else None,
        graph_count=len(backend.compile_ids),
        output=check,
    )
    kept = (output, *second) if keep_first else ()
    return ModeRun(mode, call, result, output, backend, first_outputs=kept)


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
    x = torch_adapter.probe_input(device)
    compiled = torch_adapter.compile_mode(broken, backend, False)
    compiled_unbroken = torch_adapter.compile_mode(unbroken, backend, False)
    probe = Probe(lambda: compiled(x), lambda: compiled_unbroken(x))
    with filtered_native_stderr():
        for _ in range(2):
            probe.call()
            probe.unbroken()
    return probe


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

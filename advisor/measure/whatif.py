"""Measured counterfactuals: the workload compiled again with one change (a `Variant`: a Dynamo
config knob, a placement of torch.compile, a side effect made a no-op), checked against eager
(and the default mode's own difference from eager kept beside it), its visible behaviour
compared, and timed interleaved with the unmodified default mode.

Each what-if is its own A/B: Dynamo is reset, the baseline and the variant are compiled with
backends of their own (so neither reuses the other's code), and both are timed round-robin with
the harness's method. Run what-ifs after profiling: the reset discards the main run's code.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from advisor.core.artifacts import Capture
from advisor.core.errors import first_line
from advisor.core.model import (
    BreakSite,
    LatencyStats,
    Location,
    Note,
    OutputCheck,
    Settings,
    WhatIf,
)
from advisor.core.stats import median_difference_ci
from advisor.core.taxonomy import Knob
from advisor.measure import harness, torch_adapter
from advisor.measure.capture import CaptureSession
from advisor.measure.patching import as_in_file
from advisor.measure.timing import Timer, Timing, interleaved_samples, timer_for
from advisor.measure.torch_adapter import compare_outputs
from advisor.measure.workload import Workload


@dataclass(frozen=True)
class ABResult:
    baseline: LatencyStats
    variant: LatencyStats
    saving_ms: float
    saving_low_ms: float
    saving_high_ms: float
    notes: tuple[Note, ...] = ()


def ab_timing(
    baseline: Callable[[], Any],
    variant: Callable[[], Any],
    settings: Settings,
    timer: Timer,
) -> ABResult:
    """Interleaved timing of two warm callables; saving = baseline - variant (ms per call)."""
    timing = interleaved_samples([("baseline", baseline), ("variant", variant)], settings, timer)
    return _ab_result(_timed(timing, "baseline"), _timed(timing, "variant"), tuple(timing.notes))


def _timed(timing: Timing, label: str) -> LatencyStats:
    """The label's latency; a callable that failed while timed fails the what-if."""
    if label not in timing.stats:
        failures = [f"{n.subject}: {n.detail}" for n in timing.notes if n.detail]
        raise RuntimeError("; ".join(failures) or f"{label} was not timed")
    return timing.stats[label]


def _ab_result(baseline: LatencyStats, variant: LatencyStats, notes: tuple[Note, ...]) -> ABResult:
    saving, low, high = median_difference_ci(baseline.samples_ms, variant.samples_ms)
    return ABResult(baseline, variant, saving, low, high, notes)


def knob_value(knob: Knob) -> Any:
    if knob.value_spec == "true":
        return True
    if knob.value_spec == "false":
        return False
    if knob.value_spec == "print":
        return {print}
    if knob.value_spec.startswith("logger:"):
        return {getattr(logging.Logger, knob.value_spec.split(":", 1)[1])}
    raise ValueError(f"unknown knob value spec {knob.value_spec!r}")


def stdout_of(call: Callable[[], Any]) -> tuple[Any, str]:
    """The call's result and what it printed (captured, not shown)."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        result = call()
    return result, buffer.getvalue()


Context = Callable[[], contextlib.AbstractContextManager[Any]]


@dataclass(frozen=True)
class Variant:
    """One change to measure: its record (what it is), how to build its call from the
    workload and a backend (`make_call`; default: the workload compiled as in the default
    mode) and what to enter around its compile and warm-up only (`compiling`: a config knob)."""

    record: WhatIf
    make_call: Callable[[Workload, Any], Callable[[], Any]] | None = None
    compiling: Context = contextlib.nullcontext


def knob_variant(knob: Knob, targets: list[BreakSite]) -> Variant:
    """The knob set (or, for a combination, each of its knobs) around the compile."""
    record = WhatIf(knob.name, knob.setting, knob.fix, "measured", tuple(t.id for t in targets))
    record = replace(record, behaviour_change=knob.behaviour, kind=knob.kind)
    return Variant(record, compiling=lambda: _knobs_set(knob.knobs))


@contextlib.contextmanager
def _knobs_set(knobs: tuple[Knob, ...]) -> Any:
    with contextlib.ExitStack() as stack:
        for knob in knobs:
            stack.enter_context(torch_adapter.dynamo_config_patch(knob.setting, knob_value(knob)))
        yield


@dataclass
class _Variant:
    """The variant, compiled and run under the capture, before the baseline."""

    call: Callable[[], Any]
    capture: Capture | None
    output: Any
    stdout: str
    compiled_before: int
    backend: torch_adapter.InductorBackend
    stats: LatencyStats | None = None  # timed before the baseline (where frames are skipped)
    first_outputs: tuple[Any, ...] = ()


def measure_variant(
    workload: Workload,
    variant: Variant,
    targets: list[BreakSite],
    reference_output: Any,
    settings: Settings,
    device: str,
    timer: Timer | None = None,
    baseline_sites: tuple[BreakSite, ...] = (),
) -> WhatIf:
    """Compile baseline and variant in this process, check the variant, time both
    interleaved (the quick protocol; the replicated one gives each its own processes).

    One measurement serves every site the variant addresses (e.g. several prints): the record
    says which of them the variant no longer has, and whether new breaks took their place.
    """
    timer = timer or timer_for(device)
    # When Dynamo skips a frame (a break in a loop) it marks the code object to be skipped for
    # every later compile in the process, whatever the backend or config. So the variant is
    # compiled first, and where the original skips frames, the two cannot be warm at once: the
    # variant is timed before the baseline is compiled (sequential, not interleaved).
    skips_frames = any(s.frame_skipped for s in (*baseline_sites, *targets))
    try:
        run = _run_variant(workload, variant, settings, timer, skips_frames)
        base_call, base_output, base_stdout = _run_baseline(workload, settings)
    except Exception as exc:  # a variant that breaks compilation is a finding for this what-if
        return failed_variant(variant, exc)
    record = checked_variant(variant.record, run, targets, reference_output, baseline_sites)
    record = replace(
        record,
        baseline_output=_check(reference_output, base_output),
        stdout_chars=(len(base_stdout), len(run.stdout)),
    )
    try:
        ab = _time(base_call, run, settings, timer)
    except RuntimeError as exc:  # one of the two failed while being timed
        return replace(record, status="failed", error=f"timing failed: {first_line(exc)}")
    return replace(
        _with_timing(record, ab),
        interleaved=run.stats is None,
        recompiled_while_timed=len(run.backend.compile_ids) != run.compiled_before,
    )


def failed_variant(variant: Variant, exc: BaseException) -> WhatIf:
    return replace(
        variant.record, status="failed", error=f"{type(exc).__name__}: {first_line(exc)}"
    )


@dataclass(frozen=True)
class PreparedVariant:
    """A variant compiled and warm in this process, for a worker of the replicated protocol:
    its record checked (sites, output) but not timed, its call, backend and stdout per call."""

    record: WhatIf
    call: Callable[[], Any]
    backend: torch_adapter.InductorBackend
    stdout_chars: int
    first_outputs: tuple[Any, ...] = ()  # its first two calls' outputs, when asked for


def prepare_variant(
    workload: Workload,
    variant: Variant,
    targets: list[BreakSite],
    reference_output: Any,
    settings: Settings,
    device: str,
    baseline_sites: tuple[BreakSite, ...] = (),
    keep_first: bool = False,
) -> PreparedVariant:
    """The variant alone in this process: compiled, warmed, checked; raises what its compile
    raised (the caller records it). `keep_first`: keep its first two calls' outputs (a
    training step's arm is compared by them)."""
    run = _run_variant(workload, variant, settings, timer_for(device), False, keep_first)
    record = checked_variant(variant.record, run, targets, reference_output, baseline_sites)
    stdout_chars = len(run.stdout)
    return PreparedVariant(record, run.call, run.backend, stdout_chars, run.first_outputs)


def checked_variant(
    base: WhatIf,
    run: _Variant,
    targets: list[BreakSite],
    reference_output: Any,
    baseline_sites: tuple[BreakSite, ...],
) -> WhatIf:
    record = _compare_sites(base, run.capture, targets, baseline_sites)
    output = _check(reference_output, run.output)
    return replace(record, matches_eager=output.matches if output else None, output=output)


def _with_timing(record: WhatIf, ab: ABResult) -> WhatIf:
    """The record with its A/B's medians, saving and interval, rounds and target."""
    return replace(
        record,
        baseline_ms=ab.baseline.median_ms,
        variant_ms=ab.variant.median_ms,
        saving_ms=ab.saving_ms,
        saving_ci_ms=(ab.saving_low_ms, ab.saving_high_ms),
        rounds=min(ab.baseline.n, ab.variant.n),
        target_met=_both_met(ab.baseline, ab.variant),
    )


def _check(reference_output: Any, output: Any) -> OutputCheck | None:
    """A variant's output against eager's; None when eager does not reproduce its own."""
    if reference_output is harness.NO_REFERENCE:
        return None
    return compare_outputs(reference_output, output)


def _run_variant(
    workload: Workload,
    variant: Variant,
    settings: Settings,
    timer: Timer,
    time_now: bool,
    keep_first: bool = False,
) -> _Variant:
    torch_adapter.reset_dynamo()
    backend = torch_adapter.InductorBackend("whatif-variant")
    make_call = variant.make_call or _compiled
    call = make_call(workload, backend)
    capture = CaptureSession()
    first: list[Any] = []
    with variant.compiling(), capture:
        for _ in range(1 + settings.warmup):
            warm, _ = stdout_of(call)
            if keep_first and len(first) < 2:
                first.append(warm)
    compiled_before = len(backend.compile_ids)
    output, stdout = stdout_of(call)
    if keep_first and len(first) < 2:
        first.append(output)
    result = capture.result()
    run = _Variant(
        call, result if result.frames else None, output, stdout, compiled_before, backend
    )
    run.first_outputs = tuple(first)
    if time_now:
        run.stats = _timed(interleaved_samples([("variant", call)], settings, timer), "variant")
        torch_adapter.reset_dynamo()
    return run


def _compiled(workload: Workload, backend: Any) -> Callable[[], Any]:
    return harness.compiled_call(workload, backend, False)


def _run_baseline(workload: Workload, settings: Settings) -> tuple[Callable[[], Any], Any, str]:
    backend = torch_adapter.InductorBackend("whatif-baseline")
    call = _compiled(workload, backend)
    for _ in range(1 + settings.warmup):
        stdout_of(call)
    output, stdout = stdout_of(call)
    return call, output, stdout


def _compare_sites(
    record: WhatIf,
    captured: Capture | None,
    targets: list[BreakSite],
    baseline_sites: tuple[BreakSite, ...],
) -> WhatIf:
    """Which targets the variant no longer has, and which breaks it has that the original did
    not. With no frame compiled under the knob there is no evidence either way."""
    if captured is None:
        return replace(record, error="the variant compiled no frame: no evidence about breaks")
    remaining = captured.sites
    if record.patch is not None:  # the patched text's lines, read as the file's
        remaining = as_in_file(record.patch, remaining)
    known = [*baseline_sites, *targets]
    return replace(
        record,
        removed=tuple(t.id for t in targets if not any(_same_site(s, t) for s in remaining)),
        new_breaks=tuple(s.where for s in remaining if not any(_same_site(s, k) for k in known)),
        remaining=len(remaining),
    )


def _time(
    base_call: Callable[[], Any], variant: _Variant, settings: Settings, timer: Timer
) -> ABResult:
    if variant.stats is None:
        return ab_timing(base_call, variant.call, settings, timer)
    baseline = interleaved_samples([("baseline", base_call)], settings, timer)
    return _ab_result(_timed(baseline, "baseline"), variant.stats, ())


def _both_met(a: LatencyStats, b: LatencyStats) -> bool | None:
    if a.target_met is None or b.target_met is None:
        return None
    return a.target_met and b.target_met


def _same_site(a: BreakSite, b: BreakSite) -> bool:
    return _same_line(a.where, b.where)


def _same_line(a: Location, b: Location) -> bool:
    return (a.file, a.line) == (b.file, b.line)


# --- guard evaluation -----------------------------------------------------------------------

GUARD_SKIP_KNOB = "skip_guard_eval_unsafe=True"
GUARD_SKIP_SETTING = "torch.compiler.set_stance"


def measure_guard_skip(
    call: Callable[[], Any],
    reference_output: Any,
    settings: Settings,
    device: str,
    timer: Timer | None = None,
) -> WhatIf | None:
    """What guard evaluation costs the warm default mode, measured: the same compiled code
    timed interleaved with and without its guards evaluated. None where this torch cannot skip
    guards. Run it while the default mode is warm (before the knob what-ifs reset Dynamo)."""
    stances = torch_adapter.guard_skipping_stances()
    if stances is None:
        return None
    default_stance, skipping_stance = stances
    base = WhatIf(GUARD_SKIP_KNOB, GUARD_SKIP_SETTING, "guards", "measured")

    def plain() -> Any:
        with default_stance():
            return call()

    def skipping() -> Any:
        with skipping_stance():
            return call()

    timer = timer or timer_for(device)
    try:
        output = skipping()
        ab = ab_timing(plain, skipping, settings, timer)
    except Exception as exc:  # a stance this code cannot run under is a finding, not a crash
        return replace(base, status="failed", error=f"{type(exc).__name__}: {first_line(exc)}")
    check = _check(reference_output, output)
    return replace(
        _with_timing(base, ab),
        kind="guards",
        matches_eager=check.matches if check else None,
        output=check,
    )

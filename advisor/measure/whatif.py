"""Measured counterfactuals: compile the workload again with a Dynamo config knob that removes a
break, check it still matches eager and whether visible behaviour changes, and time it
interleaved with the unmodified default mode.

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
from advisor.core.model import BreakSite, LatencyStats, Location, Note, Settings, WhatIf
from advisor.core.stats import median_difference_ci
from advisor.core.taxonomy import Knob
from advisor.measure import harness, torch_adapter
from advisor.measure.capture import CaptureSession
from advisor.measure.outputs import compare_outputs
from advisor.measure.timing import Timer, Timing, interleaved_samples, timer_for
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
    if knob.value_spec == "print":
        return {print}
    if knob.value_spec.startswith("logger:"):
        return {getattr(logging.Logger, knob.value_spec.split(":", 1)[1])}
    raise ValueError(f"unknown knob value spec {knob.value_spec!r}")


def _stdout_of(call: Callable[[], Any]) -> tuple[Any, str]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        result = call()
    return result, buffer.getvalue()


@dataclass
class _Variant:
    """The knob variant, compiled and run under the capture, before the baseline."""

    call: Callable[[], Any]
    capture: Capture | None
    output: Any
    stdout: str
    compiled_before: int
    backend: torch_adapter.InductorBackend
    stats: LatencyStats | None = None  # timed before the baseline (where frames are skipped)


def measure_knob(
    workload: Workload,
    knob: Knob,
    targets: list[BreakSite],
    reference_output: Any,
    settings: Settings,
    device: str,
    timer: Timer | None = None,
    baseline_sites: tuple[BreakSite, ...] = (),
) -> WhatIf:
    """Compile baseline and knob variant, check the variant, time both interleaved.

    One measurement serves every site the knob addresses (e.g. several prints): the record says
    which of them the variant no longer has, and whether new breaks took their place.
    """
    timer = timer or timer_for(device)
    base = WhatIf(knob.name, knob.setting, knob.fix, "measured", tuple(t.id for t in targets))
    # When Dynamo skips a frame (a break in a loop) it marks the code object to be skipped for
    # every later compile in the process, whatever the backend or config. So the variant is
    # compiled first, and where the original skips frames, the two cannot be warm at once: the
    # variant is timed before the baseline is compiled (sequential, not interleaved).
    skips_frames = any(s.frame_skipped for s in (*baseline_sites, *targets))
    try:
        variant = _run_variant(workload, knob, settings, timer, skips_frames)
        base_call, base_stdout = _run_baseline(workload, settings)
    except Exception as exc:  # a knob that breaks compilation is a finding for this what-if
        return replace(base, status="failed", error=f"{type(exc).__name__}: {first_line(exc)}")
    record = _compare_sites(base, variant.capture, targets, baseline_sites)
    record = replace(
        record,
        matches_eager=_matches(reference_output, variant.output),
        stdout_chars=(len(base_stdout), len(variant.stdout)),
        behaviour_change=knob.behaviour,
    )
    try:
        ab = _time(base_call, variant, settings, timer)
    except RuntimeError as exc:  # one of the two failed while being timed
        return replace(record, status="failed", error=f"timing failed: {first_line(exc)}")
    return replace(
        _with_timing(record, ab),
        interleaved=variant.stats is None,
        recompiled_while_timed=len(variant.backend.compile_ids) != variant.compiled_before,
    )


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


def _matches(reference_output: Any, output: Any) -> bool | None:
    """Whether a variant's output matches eager's; None when eager does not reproduce its own."""
    if reference_output is harness.NO_REFERENCE:
        return None
    return compare_outputs(reference_output, output)[0]


def _run_variant(
    workload: Workload, knob: Knob, settings: Settings, timer: Timer, time_now: bool
) -> _Variant:
    torch_adapter.reset_dynamo()
    backend = torch_adapter.InductorBackend("whatif-variant")
    call = harness.compiled_call(workload, backend, False)

    capture = CaptureSession()
    with torch_adapter.dynamo_config_patch(knob.setting, knob_value(knob)), capture:
        for _ in range(1 + settings.warmup):
            _stdout_of(call)
    compiled_before = len(backend.compile_ids)
    output, stdout = _stdout_of(call)
    result = capture.result()
    variant = _Variant(
        call, result if result.frames else None, output, stdout, compiled_before, backend
    )
    if time_now:
        variant.stats = _timed(interleaved_samples([("variant", call)], settings, timer), "variant")
        torch_adapter.reset_dynamo()
    return variant


def _run_baseline(workload: Workload, settings: Settings) -> tuple[Callable[[], Any], str]:
    backend = torch_adapter.InductorBackend("whatif-baseline")
    call = harness.compiled_call(workload, backend, False)

    for _ in range(1 + settings.warmup):
        _stdout_of(call)
    _, stdout = _stdout_of(call)
    return call, stdout


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
    return replace(_with_timing(base, ab), matches_eager=_matches(reference_output, output))

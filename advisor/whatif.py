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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor import harness, torch_adapter
from advisor.errors import first_line
from advisor.model import BreakRecord, LatencyStats, Settings, WhatIf
from advisor.stats import latency_stats, median_difference_ci
from advisor.taxonomy import Knob
from advisor.workload import Workload


@dataclass(frozen=True)
class ABResult:
    baseline: LatencyStats
    variant: LatencyStats
    saving_ms: float
    saving_low_ms: float
    saving_high_ms: float
    warnings: tuple[str, ...] = ()


def ab_timing(
    baseline: Callable[[], Any],
    variant: Callable[[], Any],
    settings: Settings,
    timer: harness.Timer,
) -> ABResult:
    """Interleaved timing of two warm callables; saving = baseline - variant (ms per call)."""
    samples, number, warnings = harness.interleaved_samples(
        [("baseline", baseline), ("variant", variant)], settings, timer
    )
    return _ab_result(
        samples["baseline"],
        number["baseline"],
        samples["variant"],
        number["variant"],
        tuple(warnings),
    )


def _ab_result(
    baseline_s: list[float],
    baseline_number: int,
    variant_s: list[float],
    variant_number: int,
    warnings: tuple[str, ...],
) -> ABResult:
    saving, low, high = median_difference_ci(
        [s * 1e3 for s in baseline_s], [s * 1e3 for s in variant_s]
    )
    return ABResult(
        latency_stats(baseline_s, baseline_number),
        latency_stats(variant_s, variant_number),
        saving,
        low,
        high,
        warnings,
    )


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


def measure_knob(
    workload: Workload,
    knob: Knob,
    targets: list[BreakRecord],
    reference_output: Any,
    settings: Settings,
    device: str,
    timer: harness.Timer | None = None,
    capture_factory: Callable[[], Any] | None = None,
    baseline_breaks: tuple[BreakRecord, ...] = (),
) -> dict[str, WhatIf]:
    """Compile baseline and knob variant, check the variant, time both interleaved.

    One measurement serves every break the knob addresses (e.g. several prints); the measured
    saving is shared among the breaks it removed in proportion to their estimated costs.
    """
    timer = timer or harness.timer_for(device)
    torch_adapter.reset_dynamo()
    base_backend = torch_adapter.InductorBackend("whatif-baseline")
    var_backend = torch_adapter.InductorBackend("whatif-variant")
    base_fn = torch_adapter.compile_mode(workload.fn, base_backend, False)
    var_fn = torch_adapter.compile_mode(workload.fn, var_backend, False)

    def base_call() -> Any:
        return base_fn(*workload.args, **workload.kwargs)

    def var_call() -> Any:
        return var_fn(*workload.args, **workload.kwargs)

    # When Dynamo skips a frame (a break in a loop) it marks the code object to be skipped for
    # every later compile in the process, whatever the backend or config. So the variant is
    # compiled first, and where the original skips frames, the two cannot be warm at once: the
    # variant is timed before the baseline is compiled (sequential, not interleaved).
    skips_frames = any(b.frame_skipped for b in (*baseline_breaks, *targets))
    variant_samples: tuple[list[float], int] | None = None
    try:
        capture = capture_factory() if capture_factory is not None else None
        with torch_adapter.dynamo_config_patch(knob.setting, knob_value(knob)):
            with capture if capture is not None else contextlib.nullcontext():
                for _ in range(1 + settings.warmup):
                    _stdout_of(var_call)
        compiled_before = len(var_backend.compile_ids)
        output, var_stdout = _stdout_of(var_call)
        if skips_frames:
            samples, number, _ = harness.interleaved_samples(
                [("variant", var_call)], settings, timer
            )
            variant_samples = (samples["variant"], number["variant"])
            torch_adapter.reset_dynamo()
        for _ in range(1 + settings.warmup):
            _stdout_of(base_call)
        _, base_stdout = _stdout_of(base_call)
    except Exception as exc:  # a knob that breaks compilation is a finding for this what-if
        failed = WhatIf(
            knob.name, "failed", note=f"variant failed: {type(exc).__name__}: {first_line(exc)}"
        )
        return {t.id: failed for t in targets}
    matches = (
        harness.compare_outputs(reference_output, output)[0]
        if reference_output is not harness.NO_REFERENCE
        else None
    )
    removed: dict[str, bool | None] = {t.id: None for t in targets}
    still: dict[str, str] = {}
    variant_note = ""
    new_breaks: tuple[str, ...] = ()
    captured = capture.result() if capture is not None else None
    warnings_pre = []
    if captured is not None and not captured.frames:
        captured = None  # nothing was compiled under the knob: no evidence either way
        warnings_pre.append("the variant compiled no frame (Dynamo already skips this code)")
    if captured is not None:
        remaining = captured.breaks
        removed = {t.id: not any(_same_site(b, t) for b in remaining) for t in targets}
        known = list(baseline_breaks) + list(targets)
        new_breaks = tuple(
            f"{b.gb_code or '?'} at {Path(b.file).name}:{b.line}"
            for b in remaining
            if not any(_same_site(b, k) for k in known)
        )
        if remaining:
            listed = ", ".join(
                f"{b.gb_code or '?'} at {Path(b.file).name}:{b.line}"
                + (" (frame skipped)" if b.frame_skipped else "")
                for b in remaining
            )
            variant_note = (
                f"; the variant still has {len(remaining)} break(s) ({listed}), so this is the "
                "saving of the knob, not of removing every break"
            )
        for t in targets:
            left = [f"{b.gb_code or '?'} {b.gb_type}" for b in remaining if _same_site(b, t)]
            if left:
                still[t.id] = (
                    "; the knob did not remove this break: the line still breaks "
                    f"with {', '.join(left)}"
                )
    warnings = list(warnings_pre)
    if base_stdout != var_stdout:
        warnings.append(
            f"stdout differs under the knob: {len(base_stdout)} characters per call before, "
            f"{len(var_stdout)} after"
            + (" (the print was dropped)" if base_stdout and not var_stdout else "")
        )
    elif knob.behaviour_note and knob.value_spec.startswith("logger:"):
        warnings.append(knob.behaviour_note)
    if variant_samples is None:
        ab = ab_timing(base_call, var_call, settings, timer)
    else:
        samples, number, _ = harness.interleaved_samples([("baseline", base_call)], settings, timer)
        ab = _ab_result(samples["baseline"], number["baseline"], *variant_samples, ())
        warnings.append("timed one after the other, not interleaved: the original skips frames")
    if len(var_backend.compile_ids) != compiled_before:
        warnings.append("the variant recompiled while being timed without the knob")
    gone = [t for t in targets if removed[t.id]]
    weights = {t.id: max(t.cost_ms or 0.0, 0.0) for t in gone}
    total_weight = sum(weights.values())
    results = {}
    for t in targets:
        share = 1.0
        if removed[t.id] and len(gone) > 1:
            share = weights[t.id] / total_weight if total_weight > 0 else 1.0 / len(gone)
        together = (
            f"; the knob removed {len(gone)} breaks together, this break is credited "
            f"{share:.0%} of the saving (by estimated cost)"
            if len(gone) > 1
            else ""
        )
        results[t.id] = WhatIf(
            knob=knob.name,
            status="measured",
            removes_break=removed[t.id],
            baseline_ms=ab.baseline.median_ms,
            variant_ms=ab.variant.median_ms,
            saving_ms=ab.saving_ms * share,
            saving_noise_ms=(ab.saving_high_ms - ab.saving_low_ms) / 2 * share,
            matches_eager=matches,
            behaviour_warning="; ".join(warnings) or None,
            new_breaks=new_breaks,
            note=f"A/B over {ab.baseline.n} rounds each; whole-step saving "
            f"{ab.saving_ms:.4f} ms, 95% CI [{ab.saving_low_ms:.4f}, "
            f"{ab.saving_high_ms:.4f}] ms{together}{still.get(t.id, '')}{variant_note}",
        )
    return results


def _same_site(a: BreakRecord, b: BreakRecord) -> bool:
    return a.line == b.line and a.file == b.file

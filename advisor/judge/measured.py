"""The steps that were measured rather than estimated: eager, fullgraph=True, and every what-if
variant, each scaled to the default mode's median (an A/B's own baseline drifts from it, so a
variant's step is the default median times variant / baseline). They bound the projection and
rank the measured actions against one another."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import median

from advisor.core import replication, stats
from advisor.core.kinds import ADDS_NO_COMPILE
from advisor.core.model import LatencyStats, ModeResult, Replication, WhatIf
from advisor.core.replication import measurable
from advisor.judge.numerics import mode_accepted, mode_output, what_if_accepted


@dataclass(frozen=True)
class MeasuredStep:
    source: str  # "eager", "fullgraph", or the what-if's key
    kind: str  # "eager" | "fullgraph" | a WhatIf kind
    step_ms: float  # scaled to the default mode's median
    saving_ms: float  # measured, in its own A/B (or from the modes' samples)
    saving_ci_ms: tuple[float, float]
    accepted: bool | None  # outputs judged against eager (None: no reference)
    removes: frozenset[str]  # entry ids it no longer has (fullgraph: all; eager: none)
    clean: bool  # no break took the place of the ones it removed
    what_if: WhatIf | None = None
    max_abs_diff: float | None = None
    default_abs_diff: float | None = None
    min_effect_ms: float = 0.0  # the smallest saving it can claim (Settings.min_effect of the step)
    processes: int | None = None  # the replicated processes its saving rests on (None: quick)
    waves: int | None = None  # the waves its paired saving rests on (None: pooled samples)
    # The interval this run's waves alone give; `saving_ci_ms` is where a rerun would put the
    # saving (`with_run_spread`)
    run_ci_ms: tuple[float, float] | None = None
    first_call_s: float | None = None  # the median worker's compile and first call
    # the calls after which the saving has paid for the compile it adds to the default mode's
    break_even_calls: float | None = None
    runs: int = 1  # the saved runs its saving was pooled from (`advisor.judge.pool`)

    @property
    def beyond_noise(self) -> bool:
        """Measurable: the interval excludes zero and the saving reaches the minimum effect."""
        return measurable(self.saving_ms, self.saving_ci_ms, self.min_effect_ms)


def measured_steps(
    modes: dict[str, ModeResult],
    what_ifs: tuple[WhatIf, ...],
    entry_ids: frozenset[str],
    min_effect: float = 0.0,
    run_spread: float | None = None,
) -> list[MeasuredStep]:
    """Every measured step, its interval widened to where a rerun would put its saving
    (`run_spread`: `policy.saving_spread`; None: as its run gave it)."""
    default = modes.get("default")
    if default is None or default.latency is None:
        return []
    out = [
        s for s in (_mode_step(modes.get(m), default, entry_ids) for m in ("eager", "fullgraph"))
    ]
    out += [_what_if_step(w, default) for w in what_ifs]
    level = default.latency.median_ms
    compile_s = _first_call_s(default.latency.replication) or default.first_call_s
    widened = [
        with_run_spread(replace(s, min_effect_ms=min_effect * level), level, run_spread)
        for s in out
        if s is not None
    ]
    return [replace(s, break_even_calls=break_even_calls(s, compile_s)) for s in widened]


def break_even_calls(step: MeasuredStep, default_first_call_s: float | None) -> float | None:
    """After how many calls the step's saving pays for the compile and first call it adds to
    the default mode's (both the median worker's); None where it adds none, or its saving is
    not measurable (beyond noise)."""
    if step.kind in ADDS_NO_COMPILE:
        return None
    if step.first_call_s is None or default_first_call_s is None or not step.beyond_noise:
        return None
    extra_s = step.first_call_s - default_first_call_s
    if extra_s <= 0:
        return None
    return extra_s / (step.saving_ms / 1e3)


def with_run_spread(step: MeasuredStep, level_ms: float, run_spread: float | None) -> MeasuredStep:
    """The step with its saving's interval where a rerun would put it
    (`replication.rerun_interval`); the run's own interval kept beside."""
    ci = step.saving_ci_ms
    if run_spread is None:
        return replace(step, run_ci_ms=ci)
    spread = pooled_spread(run_spread, step.runs)
    widened = replication.rerun_interval(step.saving_ms, ci, step.waves, level_ms, spread)
    return replace(step, saving_ci_ms=widened, run_ci_ms=ci)


def runs_to_settle(step: MeasuredStep) -> int | None:
    """For a saving of at least the minimum effect whose rerun interval reaches zero: how many
    runs judged together would tell it from zero if it held at this point. The interval's
    half-width falls as 1 / sqrt(runs): its run-level part by `pooled_spread`, its waves' part
    as each run adds as many waves. None for any other saving."""
    low = step.saving_ci_ms[0]
    if step.saving_ms <= 0 or step.saving_ms < step.min_effect_ms or low > 0:
        return None
    half = step.saving_ms - low
    return max(step.runs + 1, math.ceil(step.runs * (half / step.saving_ms) ** 2))


def pooled_spread(run_spread: float, runs: int) -> float:
    """The run-level spread of a saving pooled from `runs` runs (and of a rerun of as many):
    the runs' levels average out as 1 / sqrt(runs)."""
    return run_spread / math.sqrt(max(1, runs))


def what_if_with_run_spread(w: WhatIf, level_ms: float, run_spread: float | None) -> WhatIf:
    """The what-if as the judge reads it: its saving's interval where a rerun would put it."""
    if run_spread is None or w.saving_ms is None or w.saving_ci_ms is None:
        return w
    waves = len(w.process_savings_ms) or None
    spread = pooled_spread(run_spread, w.replication.runs if w.replication else 1)
    widened = replication.rerun_interval(w.saving_ms, w.saving_ci_ms, waves, level_ms, spread)
    return replace(w, saving_ci_ms=widened)


def mode_saving(
    mode: LatencyStats, default: LatencyStats
) -> tuple[float, float, float, int | None]:
    """default - mode per call, with its 95% interval and the waves it rests on: paired wave by
    wave where both were replicated (`advisor.core.replication`), else from the pooled samples
    of one process (waves None)."""
    a, b = default.replication, mode.replication
    if a is not None and b is not None and a.by_wave and b.by_wave:
        try:
            paired = replication.paired_from_medians(a.wave_medians(), b.wave_medians())
        except ValueError:
            paired = None
        if paired is not None and paired.ci_ms is not None:
            return paired.saving_ms, paired.ci_ms[0], paired.ci_ms[1], paired.waves
    return (*stats.median_difference_ci(default.samples_ms, mode.samples_ms), None)


def _first_call_s(r: Replication | None) -> float | None:
    return median(list(r.first_call_s)) if r is not None and r.first_call_s else None


def _mode_step(
    mode: ModeResult | None, default: ModeResult, entry_ids: frozenset[str]
) -> MeasuredStep | None:
    if mode is None or mode.status != "ok" or mode.latency is None or not mode.latency.samples_ms:
        return None
    assert default.latency is not None
    saving, low, high, waves = mode_saving(mode.latency, default.latency)
    eager = mode.mode == "eager"
    own, reference = mode_output(mode), mode_output(default)
    return MeasuredStep(
        source=mode.mode,
        kind=mode.mode,
        step_ms=mode.latency.median_ms,
        saving_ms=saving,
        saving_ci_ms=(low, high),
        processes=mode.latency.replication.processes if mode.latency.replication else None,
        waves=waves,
        runs=mode.latency.replication.runs if mode.latency.replication else 1,
        first_call_s=_first_call_s(mode.latency.replication),
        accepted=True if eager else mode_accepted(mode, default),
        removes=frozenset() if eager else entry_ids,
        clean=True,
        max_abs_diff=own.max_abs_diff if own else None,
        default_abs_diff=reference.max_abs_diff if reference else None,
    )


def in_default_frame(w: WhatIf, default_ms: float) -> WhatIf:
    """The what-if's numbers scaled to the default mode's median, the frame every saving and
    step of a report is in. Its A/B ran minutes after the modes were timed, and the machine's
    speed drifts in between (the same compiled code measured 0.5x-1.7x apart in one run on a
    shared CPU); its ratios hold, its raw milliseconds do not. The record keeps them raw."""
    if not w.baseline_ms or w.saving_ms is None or default_ms <= 0:
        return w
    k = default_ms / w.baseline_ms
    ci = w.saving_ci_ms
    return replace(
        w,
        baseline_ms=default_ms,
        variant_ms=w.variant_ms * k if w.variant_ms is not None else None,
        saving_ms=w.saving_ms * k,
        saving_ci_ms=(ci[0] * k, ci[1] * k) if ci is not None else None,
    )


def _what_if_step(w: WhatIf, default: ModeResult) -> MeasuredStep | None:
    if w.status != "measured" or w.saving_ms is None or w.saving_ci_ms is None:
        return None
    if not w.baseline_ms or w.variant_ms is None:
        return None
    assert default.latency is not None
    output = w.output
    reference = w.baseline_output or mode_output(default)
    return MeasuredStep(
        source=w.knob,
        kind=w.kind,
        step_ms=default.latency.median_ms * w.variant_ms / w.baseline_ms,
        saving_ms=w.saving_ms,
        saving_ci_ms=w.saving_ci_ms,
        processes=w.replication.processes if w.replication else None,
        waves=len(w.process_savings_ms) or None,
        runs=w.replication.runs if w.replication else 1,
        first_call_s=_first_call_s(w.replication),
        accepted=what_if_accepted(w, default),
        removes=frozenset(w.removed),
        clean=not w.new_breaks,
        what_if=w,
        max_abs_diff=output.max_abs_diff if output else None,
        default_abs_diff=reference.max_abs_diff if reference else None,
    )


def all_fixed(steps: list[MeasuredStep], entry_ids: frozenset[str]) -> MeasuredStep | None:
    """The fastest measured variant that removes every entry cleanly with outputs accepted:
    fullgraph=True, or a knob that removed them all (a placement does not remove breaks)."""
    candidates = [
        s
        for s in steps
        if s.kind in ("fullgraph", "knob", "noop", "patch")
        and s.accepted is not False
        and s.clean
        and entry_ids
        and entry_ids <= s.removes
    ]
    return min(candidates, key=lambda s: s.step_ms, default=None)

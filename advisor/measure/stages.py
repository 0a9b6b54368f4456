"""The measuring stages after the modes, shared by the in-process run (`pipeline`) and the
isolated one (`isolate`), so both take the same measurements in the same order:

1. the modes (`harness.measure`), with the capture of the default mode's compile;
2. while the default mode is warm: its profile (with the break probe) and guard evaluation;
3. the what-ifs the capture calls for (`what_if_plan`), each compiled again and timed against
   the unmodified code.

Which what-ifs to try follows from the kinds of break captured, never from a judgement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from advisor.core.artifacts import ProfileTrace
from advisor.core.errors import first_line
from advisor.core.model import BreakSite, Note, Settings, WhatIf
from advisor.core.taxonomy import Knob, knob_for
from advisor.measure import harness
from advisor.measure.profile import profile_calls
from advisor.measure.quiet import filtered_native_stderr
from advisor.measure.whatif import measure_guard_skip, measure_knob
from advisor.measure.workload import Workload

# Profiler sessions per run, each paired with its own unprofiled timing (see profile_calls).
PROFILE_SESSIONS = 4


@dataclass(frozen=True)
class WarmStage:
    """What stage 2 measured on the warm default mode."""

    trace: ProfileTrace
    guards: WhatIf | None  # None: not asked for, or this torch cannot skip guards


def warm_default_stage(
    call: Callable[[], Any],
    reference: Any,
    settings: Settings,
    device: str,
    notes: list[Note],
) -> WarmStage:
    """Profile the warm default mode, then time it with and without guard evaluation (both
    before anything resets Dynamo)."""
    trace = profile_default(call, settings, device, notes)
    guards = measure_guard_skip(call, reference, settings, device) if settings.what_if else None
    return WarmStage(trace, guards)


def profile_default(
    call: Callable[[], Any], settings: Settings, device: str, notes: list[Note]
) -> ProfileTrace:
    probe = None
    try:
        probe = harness.break_probe(device)
    except Exception as exc:  # the estimate then omits the probe's prices, and says so
        notes.append(Note("probe_failed", detail=f"{type(exc).__name__}: {first_line(exc)}"))
    with filtered_native_stderr():
        return profile_calls(
            call, settings.profile_calls, device, probe=probe, sessions=PROFILE_SESSIONS
        )


@dataclass(frozen=True)
class WhatIfPlan:
    """One what-if to measure: a config knob and the captured sites it may remove."""

    knob: Knob
    targets: tuple[BreakSite, ...]

    @property
    def label(self) -> str:
        return self.knob.name

    def failed(self, error: str) -> WhatIf:
        """The record of this what-if when it could not be measured."""
        knob = self.knob
        ids = tuple(t.id for t in self.targets)
        return WhatIf(knob.name, knob.setting, knob.fix, "failed", ids, error=error)


def what_if_plan(sites: tuple[BreakSite, ...]) -> list[WhatIfPlan]:
    """Each config knob that could remove one of the captured breaks, with the sites it may
    remove (from the break kinds alone: nothing has been judged yet)."""
    by_knob: dict[Knob, list[BreakSite]] = {}
    for site in sites:
        knob = knob_for(site)
        if knob is not None:
            by_knob.setdefault(knob, []).append(site)
    return [WhatIfPlan(knob, tuple(targets)) for knob, targets in by_knob.items()]


def measure_what_if(
    workload: Workload,
    plan: WhatIfPlan,
    reference: Any,
    settings: Settings,
    device: str,
    sites: tuple[BreakSite, ...],
) -> WhatIf:
    """Stage 3 for one item of the plan (Dynamo is reset: run it after stage 2)."""
    return measure_knob(
        workload, plan.knob, list(plan.targets), reference, settings, device, baseline_sites=sites
    )

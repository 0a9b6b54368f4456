"""The pipeline, end to end: workload -> harness -> capture -> profile -> attribute -> advise.

This module only orchestrates; each stage lives in its own module. It returns a `Report` and
writes nothing (the CLI renders and writes).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from advisor import environment, harness, torch_adapter
from advisor.advise import advise, finalize_with_what_ifs, recompile_summary
from advisor.attribute import attribute
from advisor.capture import CaptureSession
from advisor.errors import first_line
from advisor.model import Attribution, BreakRecord, Report, Settings, WhatIf, WorkloadInfo
from advisor.profile import profile_calls
from advisor.quiet import filtered_native_stderr
from advisor.taxonomy import Knob
from advisor.whatif import measure_knob
from advisor.workload import Workload, load_target

Progress = Callable[[str], None]


@dataclass(frozen=True)
class RunOptions:
    target: str
    device: str = "auto"
    settings: Settings = field(default_factory=Settings)
    modes: tuple[str, ...] = ("eager", "default", "fullgraph")
    params: tuple[tuple[str, Any], ...] = ()  # keyword arguments for the target's factory


# Profiler sessions per run, each paired with its own unprofiled timing (see profile_calls).
PROFILE_SESSIONS = 4


def run(options: RunOptions, progress: Progress = lambda _msg: None) -> Report:
    started = time.perf_counter()
    device = harness.resolve_device(options.device)
    workload = load_target(options.target, device, dict(options.params))
    try:
        return analyse(workload, options, device, progress, started)
    finally:
        torch_adapter.reset_dynamo()  # leave no compiled state behind for the next run


def analyse(
    workload: Workload, options: RunOptions, device: str, progress: Progress, started: float
) -> Report:
    settings = options.settings
    progress(
        f"measuring {workload.name} on {device}: eager, fullgraph and default "
        "torch.compile (Inductor compiles can take a while)..."
    )
    session = CaptureSession()
    measured = harness.measure(
        workload, settings, device, modes=options.modes, observers={"default": lambda: session}
    )
    modes = {m.mode: m for m in measured.modes}
    capture = session.result()
    warnings = list(measured.warnings) + list(capture.warnings)
    default = modes.get("default")
    breaks: tuple[BreakRecord, ...] = capture.breaks
    attribution_model = None
    recompiles = capture.recompiles
    if default is not None and default.status == "ok" and "default" in measured.calls:
        assert default.latency is not None
        progress(f"profiling {settings.profile_calls} warm calls of the default mode...")
        probe = None
        try:
            probe = harness.graph_call_probe(device)
        except Exception as exc:  # the estimate then omits the graph-call term, and says so
            warnings.append(f"graph-call probe failed to compile: {first_line(exc)}")
        with filtered_native_stderr():
            trace = profile_calls(
                measured.calls["default"],
                settings.profile_calls,
                device,
                probe=probe,
                sessions=PROFILE_SESSIONS,
            )
        att = attribute(trace, capture, default.latency.median_ms)
        attribution_model = att.attribution
        warnings += list(att.warnings)
        advice = advise(att, default, capture.recompiles, settings.ignore_share)
        warnings += list(advice.warnings)
        recompiles = advice.recompiles
        what_ifs: dict[str, WhatIf] = {}
        if settings.what_if and advice.knobs:
            what_ifs = _run_what_ifs(
                workload,
                advice.knobs,
                advice.breaks,
                measured.reference_output,
                settings,
                device,
                progress,
            )
        breaks = finalize_with_what_ifs(advice, what_ifs, settings.ignore_share)
        summary = recompile_summary(recompiles)
        if summary:
            warnings.append(summary)
    return Report(
        workload=WorkloadInfo(name=workload.name, target=options.target, device=device),
        environment=environment.describe(device),
        settings=settings,
        modes=tuple(measured.modes),
        graphs=capture.graphs,
        breaks=breaks,
        attribution=attribution_model or Attribution(),
        recompiles=recompiles,
        warnings=tuple(warnings),
        created_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        wall_s=time.perf_counter() - started,
    )


def _run_what_ifs(
    workload: Workload,
    knobs: tuple[tuple[str, Knob], ...],
    breaks: tuple[BreakRecord, ...],
    reference: object,
    settings: Settings,
    device: str,
    progress: Progress,
) -> dict[str, WhatIf]:
    by_knob: dict[Knob, list[BreakRecord]] = defaultdict(list)
    by_id = {b.id: b for b in breaks}
    for break_id, knob in knobs:
        by_knob[knob].append(by_id[break_id])
    results: dict[str, WhatIf] = {}
    for knob, targets in by_knob.items():
        progress(f"what-if: measuring {knob.name} ({len(targets)} break(s))...")
        results.update(
            measure_knob(
                workload,
                knob,
                targets,
                reference,
                settings,
                device,
                capture_factory=CaptureSession,
                baseline_breaks=breaks,
            )
        )
    return results

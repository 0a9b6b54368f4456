"""The pipeline, end to end: workload -> harness -> capture -> profile -> attribute -> advise.

This module only orchestrates; each stage lives in its own module. It returns a `Report` and
writes nothing (the CLI renders and writes).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from advisor import environment, harness
from advisor.model import Report, Settings, WorkloadInfo
from advisor.workload import load_target

Progress = Callable[[str], None]


@dataclass(frozen=True)
class RunOptions:
    target: str
    device: str = "auto"
    settings: Settings = Settings()
    modes: tuple[str, ...] = ("eager", "default", "fullgraph")


def run(options: RunOptions, progress: Progress = lambda _msg: None) -> Report:
    started = time.perf_counter()
    device = harness.resolve_device(options.device)
    workload = load_target(options.target, device)
    progress(f"measuring {workload.name} on {device}: eager, then compiling (Inductor)...")
    measured = harness.measure(workload, options.settings, device, modes=options.modes)
    return Report(
        workload=WorkloadInfo(name=workload.name, target=options.target, device=device),
        environment=environment.describe(device),
        settings=options.settings,
        modes=tuple(measured.modes),
        warnings=tuple(measured.warnings),
        created_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        wall_s=time.perf_counter() - started,
    )

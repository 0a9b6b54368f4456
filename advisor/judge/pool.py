"""Several saved runs of one target judged as one (`advisor judge RUN RUN ...`).

One run cannot tell a saving under about 6.9% of the step from zero on this machine: whatever
its waves say, a rerun's level moves by the run-level spread (`policy.SAVING_RUN_SPREAD`), and
its interval carries that spread for both runs (`replication.rerun_interval`). Runs judged
together carry it once per run pooled: the run-level part of each side falls as 1/runs in
variance, so two runs resolve about 4.9% and four about 3.5%. Pooling keeps the replicated
protocol's pairing: every arm's processes are kept wave by wave (each run's waves renumbered
after the previous run's), and a what-if's saving is paired with the default mode's process of
its own wave, as in one run (`replication.paired_from_medians`). Waves of different runs differ
by their run's level too, so the pooled waves' interval already holds part of the run-level
spread; adding it on top is conservative.

The profile, the capture, the outputs and the estimates are the first run's: they describe the
code, which is the same in every run. A what-if that failed in any run is a failure in the pool
(a knob that crashes once is never an action).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace

from advisor.core import replication, stats
from advisor.core.artifacts import Measurements
from advisor.core.errors import AdvisorError
from advisor.core.model import LatencyStats, ModeResult, Replication, WhatIf


def pooled(runs: Sequence[Measurements], names: Sequence[str] = ()) -> Measurements:
    """The runs as one record (one run: itself); an AdvisorError naming the run when they are
    not runs of one target measured the same way. `names` label the runs in that error."""
    if not runs:
        raise AdvisorError("no run to judge")
    if len(runs) == 1:
        return runs[0]
    labels = list(names) or [f"run {i + 1}" for i in range(len(runs))]
    check_poolable(runs, labels)
    offsets = _wave_offsets(runs)
    modes = tuple(_pooled_mode(m.mode, runs, offsets) for m in runs[0].modes)
    default = next((m for m in modes if m.mode == "default"), None)
    assert default is not None and default.latency is not None  # check_poolable saw to it
    assert default.latency.replication is not None
    base = default.latency.replication.wave_medians()
    knobs = list(dict.fromkeys(w.knob for run in runs for w in run.what_ifs))
    what_ifs = tuple(_pooled_what_if(knob, runs, offsets, base) for knob in knobs)
    first = runs[0]
    return replace(
        first,
        modes=modes,
        what_ifs=what_ifs,
        settings=replace(first.settings, runs=sum(r.settings.runs for r in runs)),
        wall_s=sum(r.wall_s or 0.0 for r in runs) or None,
    )


def check_poolable(runs: Sequence[Measurements], labels: Sequence[str]) -> None:
    """One target (the same factory and parameters, device and threads), every run replicated
    with its default mode timed: anything else would pool different numbers."""
    first = runs[0]
    for run, label in zip(runs, labels, strict=True):
        default = run.mode("default")
        if run.settings.protocol != "replicated" or run.ranks:
            raise AdvisorError(
                f"cannot pool {label}: only replicated single-process runs can be judged "
                f"together (it was measured with --{run.settings.protocol})"
            )
        if default is None or default.latency is None or default.latency.replication is None:
            raise AdvisorError(f"cannot pool {label}: its default mode was not timed")
        if (_target(run.workload.target), run.workload.params) != (
            _target(first.workload.target),
            first.workload.params,
        ):
            raise AdvisorError(
                f"cannot pool {label}: it measured {run.workload.target}, "
                f"not {first.workload.target} with the same parameters"
            )
        same = (run.workload.device, run.settings.threads, run.environment.every_cpu)
        if same != (first.workload.device, first.settings.threads, first.environment.every_cpu):
            raise AdvisorError(
                f"cannot pool {label}: its device or threads differ from the first run's"
            )


def _target(target: str) -> str:
    """A target with its file's path normalised (`dir/../m.py:build` is `m.py:build`)."""
    where, sep, name = target.rpartition(":")
    return f"{os.path.normpath(where)}{sep}{name}" if "/" in where else target


def _wave_offsets(runs: Sequence[Measurements]) -> list[int]:
    """Where each run's waves start in the pool: after every wave of the runs before it."""
    offsets, start = [], 0
    for run in runs:
        offsets.append(start)
        start += 1 + max((w for r in _replications(run) for w in r.waves), default=-1)
    return offsets


def _replications(run: Measurements) -> list[Replication]:
    latencies = [m.latency for m in run.modes if m.latency is not None]
    found = [lat.replication for lat in latencies] + [w.replication for w in run.what_ifs]
    return [r for r in found if r is not None]


def pooled_replication(parts: Sequence[tuple[Replication, int]]) -> Replication:
    """Replications of one arm, each with its run's wave offset, as one."""
    medians = tuple(m for r, _ in parts for m in r.process_medians_ms)
    whole = all(len(r.machine_ms) == len(r.process_medians_ms) for r, _ in parts)
    levels = all(len(r.over_machine) == len(r.process_medians_ms) for r, _ in parts)
    return Replication(
        processes=sum(r.processes for r, _ in parts),
        rounds=min(r.rounds for r, _ in parts),
        process_medians_ms=medians,
        waves=tuple(w + offset for r, offset in parts for w in r.waves),
        interval_ms=replication.t_interval(medians),
        first_call_s=tuple(s for r, _ in parts for s in r.first_call_s),
        dropped=tuple(d for r, _ in parts for d in r.dropped),
        remeasured=any(r.remeasured for r, _ in parts),
        disagree=any(r.disagree for r, _ in parts),
        machine_ms=tuple(m for r, _ in parts for m in r.machine_ms) if whole else (),
        over_machine=tuple(m for r, _ in parts for m in r.over_machine) if levels else (),
        runs=sum(r.runs for r, _ in parts),
    )


def _pooled_latency(parts: Sequence[tuple[LatencyStats, int]]) -> LatencyStats:
    reps = [(lat.replication, offset) for lat, offset in parts]
    rep = pooled_replication([(r, o) for r, o in reps if r is not None])
    samples = tuple(s for lat, _ in parts for s in lat.samples_ms)
    contention = [lat.contention for lat, _ in parts if lat.contention is not None]
    return replace(
        parts[0][0],
        median_ms=replication.median(rep.process_medians_ms),
        iqr_ms=stats.iqr(samples),
        n=sum(lat.n for lat, _ in parts),
        samples_ms=samples,
        min_ms=min(samples),
        max_ms=max(samples),
        ci_ms=rep.interval_ms,
        target_met=None,
        contention=max(contention, default=None),
        replication=rep,
    )


def _pooled_mode(name: str, runs: Sequence[Measurements], offsets: Sequence[int]) -> ModeResult:
    """The mode over the runs that timed it by wave; the first run's as it was where it failed
    there or no run timed it so."""
    first = runs[0].mode(name)
    assert first is not None
    parts = []
    for run, offset in zip(runs, offsets, strict=True):
        mode = run.mode(name)
        if mode is not None and mode.status == "ok" and mode.latency is not None:
            if mode.latency.replication is not None and mode.latency.replication.by_wave:
                parts.append((mode.latency, offset))
    if first.status != "ok" or not parts:
        return first
    return replace(first, latency=_pooled_latency(parts))


def _pooled_what_if(
    knob: str, runs: Sequence[Measurements], offsets: Sequence[int], base: dict[int, float]
) -> WhatIf:
    """The what-if over every run that measured it, paired with the pooled default mode wave
    by wave; the first failure where any run's failed."""
    found = [
        (w, offset)
        for run, offset in zip(runs, offsets, strict=True)
        for w in run.what_ifs
        if w.knob == knob
    ]
    failed = next((w for w, _ in found if w.status != "measured"), None)
    if failed is not None:
        return failed
    timed = [(w.replication, offset) for w, offset in found if w.replication is not None]
    parts = [(r, offset) for r, offset in timed if r.by_wave]
    first = found[0][0]
    if not parts:
        return first
    rep = pooled_replication(parts)
    try:
        saving = replication.paired_from_medians(base, rep.wave_medians())
    except ValueError:
        return first
    return replace(
        first,
        baseline_ms=replication.median(list(base.values())),
        variant_ms=replication.median(rep.process_medians_ms),
        saving_ms=saving.saving_ms,
        saving_ci_ms=saving.ci_ms,
        rounds=rep.rounds,
        recompiled_while_timed=any(w.recompiled_while_timed for w, _ in found),
        replication=rep,
        process_savings_ms=saving.per_wave_ms,
    )

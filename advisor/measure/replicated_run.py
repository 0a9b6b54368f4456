"""`advisor run` with the replicated protocol (the default): measure a target as a plan of arms,
each arm in worker processes of its own, and collect the measurements.

1. **Profile process**: one process (`advisor.measure.isolated_worker`, task "default") compiles
   the default mode under the capture and profiles it: attribution needs one trace. Its capture
   gives the plan. Its own timing is not used for any compared number.
2. **Plan**: the arms to compare: the modes (eager, default, fullgraph), each what-if the
   capture calls for (`advisor.measure.stages.what_if_plan`) and guard evaluation skipped.
3. **Arms**: `advisor.measure.replicate.measure_arms` runs the waves (one process per arm per
   wave, rounds interleaved).
4. **Collected**: each arm's numbers become the usual records (`ModeResult`, `WhatIf`) with a
   `Replication` beside them; a what-if's saving is paired with the default arm wave by wave.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, replace

from advisor.core import policy, replication
from advisor.core.artifacts import Capture, Measurements, WorkerEnvironment
from advisor.core.errors import AdvisorError
from advisor.core.measured import takes_every_cpu
from advisor.core.model import (
    LatencyStats,
    ModeError,
    ModeResult,
    Note,
    OutputCheck,
    Replication,
    WhatIf,
)
from advisor.core.stats import latency_stats
from advisor.measure import environment, first_steps, metronome, torch_adapter
from advisor.measure.arms import (
    GUARDS_ARM,
    METRONOME_ARM,
    Arm,
    ArmTask,
    is_metronome,
    mode_arm,
    what_if_arm,
)
from advisor.measure.candidates import plan_candidates
from advisor.measure.cpus import pinned
from advisor.measure.environment import cpu_affinity
from advisor.measure.harness import MODE_ORDER
from advisor.measure.isolate import Task, TaskResult, params_json, run_task
from advisor.measure.pipeline import MeasureInterrupted, Progress, RunOptions, fitted, workload_info
from advisor.measure.replicate import (
    BASELINE,
    ArmRecord,
    Plan,
    measure_arms,
    metronome_of,
    reference_of,
    start_server,
)
from advisor.measure.stages import allocator_planned, what_if_plan
from advisor.measure.workload import check_target


def measure_replicated(options: RunOptions, device: str, progress: Progress) -> Measurements:
    """Profile once, then every arm replicated. Ctrl-C raises `MeasureInterrupted` with the
    profile's record (the arms' partial waves are not a number)."""
    check_target(options.target, options.params)  # bad targets fail here, in seconds
    options, notes = fitted(options)
    started, created = time.perf_counter(), time.strftime("%Y-%m-%dT%H:%M:%S%z")
    progress("profiling the default mode in its own process (capture and trace)...")
    # the workers' fork server warms up (imports, CPU probe) while the profile process starts:
    # the profile's own timing is compared with nothing, and its trace is read as shares
    start_server()
    profile = _profile(options, device)
    info = workload_info(profile.name or options.target, options, device)
    base = Measurements(
        workload=info,
        environment=profile.environment or environment.unknown(),
        settings=options.settings,
        capture=profile.capture or Capture(),
        trace=profile.trace,
        notes=(*notes, *profile.notes),
        workers=(WorkerEnvironment("profile", profile.environment),) if profile.environment else (),
        created_at=created,
    )
    arms = planned_arms(options, base.capture, profile.mode, allocator_planned(profile.trace))
    plans = [a.plan for a in arms if a.plan is not None]
    base = replace(base, candidates=plan_candidates(base.capture.sites, plans) if plans else ())
    try:
        records = _measure(arms, options, device, base.capture, progress)
    except KeyboardInterrupt:
        raise MeasureInterrupted(replace(base, incomplete=True)) from None
    modes, what_ifs, more = collected(records, options)
    _eager_must_run(modes)
    return replace(
        base,
        modes=modes,
        what_ifs=what_ifs,
        notes=(*_superseded(base.notes, more), *more),
        wall_s=time.perf_counter() - started,
    )


def _superseded(notes: tuple[Note, ...], more: tuple[Note, ...]) -> tuple[Note, ...]:
    """The profile's notes less "eager is not reproducible" where a training step's arms were
    compared by their first steps instead (its note says how)."""
    if not any(n.kind.startswith("first_steps") for n in more):
        return notes
    return tuple(n for n in notes if n.kind != "eager_not_reproducible")


def _eager_must_run(modes: tuple[ModeResult, ...]) -> None:
    """A workload whose eager arm failed in its own process (a crash, a hang, an exception)
    is bad input, as in the quick protocol: nothing compiled can be compared with it."""
    eager = next((m for m in modes if m.mode == "eager"), None)
    if eager is None or eager.status == "ok":
        return
    why = f"{eager.error.type}: {eager.error.message}" if eager.error else "no result"
    raise AdvisorError(f"the workload fails in eager mode, in a process of its own ({why})")


PROFILE_ROUNDS = 3  # the profile process's own timing is compared with nothing: a few rounds


def _profile(options: RunOptions, device: str) -> TaskResult:
    # guards are an arm of their own; the timing here only warms the mode before its profile
    # (a script's loop has only so many iterations to give)
    settings = dataclasses.replace(
        options.settings, what_if=False, repeats=PROFILE_ROUNDS, target_ci=0.0
    )
    task = Task("default", options.target, params_json(options.params), device, settings)
    outcome = run_task(task, settings.timeout_s)
    if isinstance(outcome, ModeError):
        failed = ModeResult("default", "failed", error=outcome)
        return TaskResult(mode=failed)
    if outcome.error:
        raise AdvisorError(outcome.error)  # bad input, e.g. the workload fails in eager mode
    return outcome


def planned_arms(
    options: RunOptions, capture: Capture, default: ModeResult | None, allocator: bool = False
) -> list[Arm]:
    """The modes asked for, then (the default mode compiled and what-ifs asked for) each
    what-if the capture calls for (with `allocator`, the C allocator keeping freed memory too:
    each arm has processes of its own) and guard evaluation skipped."""
    arms = [mode_arm(m) for m in MODE_ORDER if m in options.modes or m == "eager"]
    if not options.settings.what_if or default is None or default.status != "ok":
        return arms
    plans = what_if_plan(capture.sites, training=capture.training, allocator=allocator)
    arms += [what_if_arm(p) for p in plans]
    return [*arms, GUARDS_ARM]


def _measure(
    arms: list[Arm], options: RunOptions, device: str, capture: Capture, progress: Progress
) -> dict[str, ArmRecord]:
    settings = options.settings
    pj = params_json(options.params)
    training = capture.training is not None  # its arms start from the model as built
    tasks = [
        ArmTask(a, options.target, pj, device, settings, sites=capture.sites, training=training)
        for a in arms
    ]
    if device == metronome.DEVICE:
        # a host-speed reference: on an accelerator the timed work is the device's, whose speed
        # the host's does not track, so reading arms over it would add noise, not remove it
        tasks.append(ArmTask(METRONOME_ARM, options.target, pj, metronome.DEVICE, settings))
    build_cpus = cpu_affinity()
    with pinned(settings.threads) as cpus:
        plan = Plan(
            waves=settings.processes,
            rounds=settings.repeats,
            timeout_s=settings.timeout_s,
            build_cpus=build_cpus,
            time_cpus=cpus if settings.threads is not None else (),
            budget_s=settings.wave_budget_s,
            target_ci=settings.target_ci,
            settle_waves=settings.settle_waves,
            min_effect=settings.min_effect,
            # the spread the judge will read from the run's environment (`Environment.every_cpu`)
            run_spread=policy.saving_spread(
                takes_every_cpu(
                    settings.threads or torch_adapter.intra_op_threads(), os.cpu_count() or 0
                )
            ),
        )
        return measure_arms(tasks, plan, progress)


def collected(
    records: dict[str, ArmRecord], options: RunOptions
) -> tuple[tuple[ModeResult, ...], tuple[WhatIf, ...], tuple[Note, ...]]:
    """The records of what the arms measured, and the notes of their pathologies (and, for a
    training step, of how its arms' first steps compared with eager's)."""
    baseline = records.get(BASELINE)
    machine = _MachineSpeed.of(metronome_of(records))
    records = {k: r for k, r in records.items() if not is_metronome(r.task.arm)}
    notes = _pathologies(records)
    checks: dict[str, OutputCheck] = {}
    if any(r.task.training for r in records.values()):
        checks, compared = first_steps.arm_checks({r.label: r.builds for r in records.values()})
        notes.append(compared)
    modes = tuple(
        first_steps.with_mode_check(_mode_result(r, machine), checks.get(r.label))
        for r in records.values()
        if r.task.arm.kind == "mode"
    )
    what_ifs = tuple(
        first_steps.with_what_if_check(
            _what_if(r, baseline, machine), checks.get(r.label), checks.get(BASELINE)
        )
        for r in records.values()
        if r.task.arm.kind != "mode"
    )
    return modes, what_ifs, tuple(notes)


def _pathologies(records: dict[str, ArmRecord]) -> list[Note]:
    """Blocks dropped (a recompile while timed) and processes that disagreed."""
    notes: list[Note] = []
    for record in records.values():
        if record.dropped:
            detail = "; ".join(record.dropped[:3]) + (" ..." if len(record.dropped) > 3 else "")
            values = {"blocks": float(len(record.dropped))}
            notes.append(Note("blocks_dropped", record.label, values=values, detail=detail))
        if record.disagree:
            other = reference_of(record, records)
            level = replication.relative_levels(record.samples, other.samples if other else None)
            paired = float(other is not None)
            values = {
                "spread": replication.spread(level),
                "processes": float(len(level)),
                "paired": paired,
            }
            detail = other.label if other is not None else ""
            notes.append(Note("processes_disagree", record.label, values=values, detail=detail))
    return notes


def _mode_result(record: ArmRecord, machine: _MachineSpeed | None) -> ModeResult:
    mode = record.task.arm.mode
    failure = record.failure
    if isinstance(failure, ModeError):
        return ModeResult(mode, "failed", error=failure)
    if failure is not None:
        if failure.mode is not None:
            return failure.mode
        return ModeResult(mode, "failed", error=ModeError("Error", failure.error or "no result"))
    first = record.builds[0].mode
    assert first is not None
    return replace(first, latency=replicated_latency(record, machine))


def replicated_latency(record: ArmRecord, machine: _MachineSpeed | None) -> LatencyStats | None:
    timed = record.timed
    if not timed:
        return None
    pooled = [ms / 1e3 for process in timed for ms in process]
    stats = latency_stats(pooled, record.builds[0].number)
    return replace(
        stats,
        median_ms=replication.arm_median(timed),
        ci_ms=replication.arm_interval(timed),
        target_met=None,
        replication=_replication(record, machine),
    )


def _replication(record: ArmRecord, machine: _MachineSpeed | None) -> Replication:
    timed = record.timed
    by_wave = replication.wave_medians(record.samples)
    return Replication(
        machine_ms=_machine_by_wave(by_wave, machine),
        over_machine=_over_machine(record, by_wave, machine),
        processes=len(timed),
        rounds=min(len(p) for p in timed),
        process_medians_ms=tuple(by_wave.values()),
        waves=tuple(by_wave),
        interval_ms=replication.arm_interval(timed),
        first_call_s=tuple(b.first_call_s for b in record.builds if b.first_call_s is not None),
        dropped=tuple(record.dropped),
        remeasured=record.remeasured,
        disagree=record.disagree,
    )


@dataclass(frozen=True)
class _MachineSpeed:
    """The metronome's timing, read once for every arm: its median and its blocks by round, per
    wave."""

    medians: dict[int, float]
    blocks: dict[int, dict[int, float]]

    @classmethod
    def of(cls, machine: ArmRecord | None) -> _MachineSpeed | None:
        if machine is None:
            return None
        blocks = {
            wave: dict(zip(rounds, samples, strict=True))
            for wave, (rounds, samples) in enumerate(
                zip(machine.rounds, machine.samples, strict=True)
            )
        }
        return cls(replication.wave_medians(machine.samples), blocks)


def _machine_by_wave(by_wave: dict[int, float], machine: _MachineSpeed | None) -> tuple[float, ...]:
    """The metronome's median in each wave the arm was timed in; () unless it has them all."""
    if machine is None or not all(w in machine.medians for w in by_wave):
        return ()
    return tuple(machine.medians[w] for w in by_wave)


def _over_machine(
    record: ArmRecord, by_wave: dict[int, float], machine: _MachineSpeed | None
) -> tuple[float, ...]:
    """Each wave's blocks over the metronome's of the same round, the median per wave; () unless
    every wave has it."""
    if machine is None:
        return ()
    out = []
    for wave in by_wave:
        reference = machine.blocks.get(wave, {})
        level = replication.over_reference(record.samples[wave], record.rounds[wave], reference)
        if level is None:
            return ()
        out.append(level)
    return tuple(out)


def _what_if(
    record: ArmRecord, baseline: ArmRecord | None, machine: _MachineSpeed | None
) -> WhatIf:
    failure = record.failure
    plan = record.task.arm.plan
    if failure is not None:
        built = failure if not isinstance(failure, ModeError) else None
        if built is not None and built.what_if is not None:
            return built.what_if
        why = f"{failure.type}: {failure.message}" if isinstance(failure, ModeError) else None
        why = why or (built.error if built else None) or "no result"
        if plan is not None:
            return plan.failed(why)
        return WhatIf(record.label, record.label, "guards", "failed", kind="guards", error=why)
    record_ = record.builds[0].what_if
    assert record_ is not None
    if baseline is None or baseline.failure is not None or not baseline.timed:
        return replace(record_, status="failed", error="the default mode was not timed")
    return paired_what_if(record_, record, baseline, machine)


def paired_what_if(
    w: WhatIf, record: ArmRecord, baseline: ArmRecord, machine: _MachineSpeed | None
) -> WhatIf:
    """The what-if's record with its saving paired against the default arm, wave by wave."""
    try:
        saving = replication.paired_saving(baseline.samples, record.samples)
    except ValueError:
        return replace(w, status="failed", error="no wave timed both it and the default mode")
    default_build = baseline.builds[0]
    chars = (default_build.stdout_chars, record.builds[0].stdout_chars)
    return replace(
        w,
        baseline_ms=replication.arm_median(baseline.timed),
        variant_ms=replication.arm_median(record.timed),
        saving_ms=saving.saving_ms,
        saving_ci_ms=saving.ci_ms,
        rounds=min(len(p) for p in record.timed),
        target_met=None,
        interleaved=True,
        recompiled_while_timed=bool(record.dropped),
        baseline_output=default_build.mode.output if default_build.mode else None,
        stdout_chars=chars if None not in chars else None,  # type: ignore[arg-type]
        replication=_replication(record, machine),
        process_savings_ms=saving.per_wave_ms,
    )

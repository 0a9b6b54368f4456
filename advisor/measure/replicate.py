"""The parent side of the replicated protocol: waves of worker processes, one per arm, timed
round by round.

A wave starts one worker per arm (`advisor.measure.arm_worker`; at most as many building at
once as there are CPUs to build on), waits until each has built its arm, then times `rounds`
rounds: in each round every arm times one block, the order rotating by round and by wave, so
the machine's drift hits every arm alike. Then the workers stop and the next wave starts fresh
processes. Each arm so gets one process per wave, and the spread between processes enters
its interval (`advisor.core.replication`).

Pathologies are caught, not averaged: a block during which the arm compiled anything (a
recompile, a cache miss) is dropped with its reason; an arm whose processes disagree beyond the
noise model gets one more wave (with the default mode's arm, its baseline) and is flagged if
they still disagree; an arm whose saving is not yet told from zero, and could lead, gets up
to `Plan.settle_waves` more (`_settle`). A worker that crashes, hangs past the timeout or
fails to build fails the arm when it happens in the first wave, and costs that wave otherwise.

Workers come from a fork server that has imported torch once (`multiprocessing`'s
"forkserver" start method, where the platform has it, else "spawn"): each process is fresh (no
compiled state, nothing of the parent's), without paying torch's import again.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from advisor.core import replication
from advisor.core.model import ModeError
from advisor.measure import arm_worker, settle_rule, timing
from advisor.measure.arms import ArmTask, Built, is_metronome
from advisor.measure.isolate import crash_error, last_line_of

Progress = Callable[[str], None]
BASELINE = "default"
REFERENCE = "eager"  # the default mode's own reference for disagreement


@dataclass
class ArmRecord:
    """What the waves measured of one arm."""

    task: ArmTask
    builds: list[Built] = field(default_factory=list)  # the built report of each wave's worker
    samples: list[list[float]] = field(default_factory=list)  # per wave: ms per call, kept blocks
    rounds: list[list[int]] = field(default_factory=list)  # per wave: each kept block's round
    dropped: list[str] = field(default_factory=list)
    failure: Built | ModeError | None = None  # the first wave could not build or time it
    remeasured: bool = False
    disagree: bool = False

    @property
    def label(self) -> str:
        return self.task.arm.label

    @property
    def timed(self) -> list[list[float]]:
        return [s for s in self.samples if s]


@dataclass(frozen=True)
class Plan:
    """How many processes per arm and rounds per process; the CPUs to build and to time on."""

    waves: int
    rounds: int
    timeout_s: float | None = None
    build_cpus: tuple[int, ...] = ()
    time_cpus: tuple[int, ...] = ()
    budget_s: float = 30.0  # timed seconds per wave, at most (rounds are cut to fit)
    # past `rounds`, a wave goes on until each arm's median in its process has a 95% interval
    # within this fraction of it, or `run_spread`'s floor (`replication.process_target`), while
    # `budget_s` lasts; 0: exactly `rounds`
    target_ci: float = 0.0
    faults_dir: str = ""  # where each worker's faulthandler writes its stack on a crash
    # an arm whose saving is unsettled gets up to this many more waves (`_settle`), read with
    # the judge's minimum effect and run-level spread (shares of the step)
    settle_waves: int = 0
    min_effect: float = 0.0
    run_spread: float = 0.0


@dataclass
class _Worker:
    record: ArmRecord
    process: Any
    conn: Connection
    wave: int


def context() -> Any:
    """The fork server (torch preloaded) where there is one, else spawn."""
    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["advisor.measure.forkserver_preload"])
        return ctx
    return multiprocessing.get_context("spawn")


def start_server() -> None:
    """Start the fork server now, so that its preload (`advisor.measure.forkserver_preload`,
    seconds) overlaps whatever the caller does next instead of delaying the first wave. The
    caller's next step must not be timed against anything: the preload takes a CPU meanwhile."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return
    context()
    from multiprocessing import forkserver

    forkserver.ensure_running()


def measure_arms(tasks: list[ArmTask], plan: Plan, progress: Progress) -> dict[str, ArmRecord]:
    """Every arm over `plan.waves` waves, plus one more wave for arms whose processes disagree
    and up to `plan.settle_waves` more for arms whose saving is unsettled."""
    with tempfile.TemporaryDirectory(prefix="advisor-arms-") as faults:
        return _waves(tasks, replace(plan, faults_dir=faults), progress)


def _waves(tasks: list[ArmTask], plan: Plan, progress: Progress) -> dict[str, ArmRecord]:
    records = {t.arm.label: ArmRecord(t) for t in tasks}
    for wave in range(plan.waves):
        arms = [r for r in _alive(records).values() if not _is_metronome(r)]
        if not arms:
            break  # every arm failed in the first wave: nothing more to time (bar the metronome)
        progress(f"wave {wave + 1} of {plan.waves}: {len(arms)} arms, one process each")
        _wave(list(_alive(records).values()), wave, plan)
    again = [r for r in _alive(records).values() if not _is_metronome(r) and _disagrees(r, records)]
    if again:
        progress(f"re-measuring {', '.join(r.label for r in again)}: its processes disagree")
        _extra_wave(again, records, plan)
        for record in again:
            record.remeasured = True
            record.disagree = _disagrees(record, records)
    _settle(records, plan, progress)
    return records


def _extra_wave(arms: list[ArmRecord], records: dict[str, ArmRecord], plan: Plan) -> None:
    """One more wave of `arms`, with the arm each is read against and the machine's reference
    (it times in every wave, so that every wave can be read against it)."""
    wave_arms = arms + [r for r in _references(arms, records) if r not in arms]
    wave_arms += [r for r in _alive(records).values() if _is_metronome(r)]
    _wave(wave_arms, max(len(r.samples) for r in records.values()), plan)


def _settle(records: dict[str, ArmRecord], plan: Plan, progress: Progress) -> None:
    """Up to `plan.settle_waves` more waves for the arms whose saving is unsettled and could
    lead (`settle_rule.to_settle`), each wave for those still so, until none is: on a target whose
    processes differ by 8-10% of the step (kornia's CNN here) four waves leave a saving of
    10% at +-17%, and sixteen measured it (docs/measurement.md)."""
    baseline = records.get(BASELINE)
    if baseline is None or baseline.failure is not None:
        return
    for _ in range(plan.settle_waves):
        open_ = settle_rule.to_settle(records, baseline, plan)
        if not open_:
            return
        progress(f"one more wave for {', '.join(r.label for r in open_)}: its saving is unsettled")
        _extra_wave(open_, records, plan)


def _is_metronome(record: ArmRecord) -> bool:
    return is_metronome(record.task.arm)


def metronome_of(records: dict[str, ArmRecord]) -> ArmRecord | None:
    """The machine-speed reference's record, when it was timed."""
    found = [r for r in records.values() if _is_metronome(r) and r.failure is None and r.timed]
    return found[0] if found else None


def _alive(records: dict[str, ArmRecord]) -> dict[str, ArmRecord]:
    return {k: r for k, r in records.items() if r.failure is None}


def reference_of(record: ArmRecord, records: dict[str, ArmRecord]) -> ArmRecord | None:
    """The arm another is read against, wave by wave, for disagreement: the default mode
    (every arm's baseline), and for the default mode the eager one. Against an arm of the same
    wave the machine's drift between waves cancels (measured here: every arm of a wave slower
    by 10-15% than the wave before, which alone read as disagreement)."""
    label = REFERENCE if record.label == BASELINE else BASELINE
    other = records.get(label)
    if other is None or other.failure is not None or other is record:
        return None
    return other


def _references(arms: list[ArmRecord], records: dict[str, ArmRecord]) -> list[ArmRecord]:
    """The arms a re-measured wave needs beside `arms`: the reference of each."""
    out: list[ArmRecord] = []
    for record in arms:
        other = reference_of(record, records)
        if other is not None and other not in out:
            out.append(other)
    return out


def _disagrees(record: ArmRecord, records: dict[str, ArmRecord]) -> bool:
    other = reference_of(record, records)
    # paired wave by wave: samples are indexed by wave
    return replication.disagrees(record.samples, other.samples if other else None)


def _wave(arms: list[ArmRecord], wave: int, plan: Plan) -> None:
    for record in arms:
        while len(record.samples) <= wave:
            record.samples.append([])
        while len(record.rounds) <= wave:
            record.rounds.append([])
    workers = _start_all(arms, wave, plan)
    try:
        _time_rounds(workers, wave, plan)
    finally:
        for worker in workers:
            _stop(worker)


def _start_all(arms: list[ArmRecord], wave: int, plan: Plan) -> list[_Worker]:
    """Start a worker per arm, at most as many building at once as there are build CPUs, and
    return those whose arm is ready to time."""
    ctx = context()
    pending = list(arms)
    building: list[_Worker] = []
    ready: list[_Worker] = []
    slots = max(1, len(plan.build_cpus) or 1)
    while pending or building:
        while pending and len(building) < slots:
            building.append(_spawn(ctx, pending.pop(0), wave, plan))
        done = wait([w.conn for w in building], timeout=plan.timeout_s)
        if not done:  # nobody reported within the timeout: the oldest builder is stuck
            _fail(building.pop(0), ModeError("Timeout", _timeout_text(plan, "building")))
            continue
        for worker in [w for w in building if w.conn in done]:
            building.remove(worker)
            if _receive_built(worker, plan):
                ready.append(worker)
    return ready


def _spawn(ctx: Any, record: ArmRecord, wave: int, plan: Plan) -> _Worker:
    parent, child = ctx.Pipe()
    task = record.task
    if record.builds and record.builds[0].number:
        # every process times alike; peak memory is the first process's (the profiler run
        # it takes costs seconds per worker, and memory does not drift like time)
        task = replace(task, number=record.builds[0].number, memory=False)
    process = ctx.Process(
        target=arm_worker.serve,
        args=(child, task, plan.build_cpus, plan.time_cpus, _faults_file(plan, record, wave)),
        name=f"advisor-arm-{record.label}",
        daemon=True,
    )
    process.start()
    child.close()
    return _Worker(record, process, parent, wave)


def _receive_built(worker: _Worker, plan: Plan) -> bool:
    try:
        _kind, built = worker.conn.recv()
    except (EOFError, OSError):
        worker.process.join(timeout=5)
        _fail(worker, _crash(worker, plan))
        return False
    record = worker.record
    record.builds.append(built)
    if not built.ready:
        _fail(worker, built)
        return False
    return True


def _faults_file(plan: Plan, record: ArmRecord, wave: int) -> str:
    if not plan.faults_dir:
        return ""
    return os.path.join(plan.faults_dir, f"wave{wave}-arm{id(record)}.txt")


def _crash(worker: _Worker, plan: Plan) -> ModeError:
    """How the worker died, and where it was (its faulthandler's innermost frame)."""
    code = worker.process.exitcode
    how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited ({code})"
    path = _faults_file(plan, worker.record, worker.wave)
    stack = Path(path).read_text(errors="replace") if path and os.path.exists(path) else ""
    output = arm_worker.output_path(path)
    last = last_line_of(Path(output))[:200] if output else ""
    return crash_error(
        f"{how} before it reported" + (f" (it printed: {last})" if last else ""), stack
    )


def _fail(worker: _Worker, why: Built | ModeError) -> None:
    """The worker is gone: in the first wave the arm fails with `why`; later, only that wave."""
    _stop(worker, kill=True)
    record = worker.record
    if not any(record.timed):
        record.failure = why
    else:
        record.dropped.append(f"process {worker.wave + 1}: {_why_text(why)}")


def _why_text(why: Built | ModeError) -> str:
    if isinstance(why, ModeError):
        return f"{why.type}: {why.message}"
    return why.error or "failed to build"


def _time_rounds(workers: list[_Worker], wave: int, plan: Plan) -> None:
    """Round after round, one block of every live arm each, the order rotating, until
    `timing.enough_rounds` says stop: at least `plan.rounds` while the wave's budget lasts, then
    until each arm's median in this process is within `replication.process_target`. A workload
    whose calls vary (random augmentation, data-dependent work) gets more blocks per process,
    which cost milliseconds, instead of more processes, which cost a build each."""
    live = list(workers)
    limits = timing.RoundLimits(
        MIN_ROUNDS,
        plan.rounds,
        plan.budget_s,
        replication.process_target(plan.target_ci, plan.run_spread),
    )
    started = time.perf_counter()
    rounds_done = 0
    while any(not _is_metronome(w.record) for w in live):  # the metronome alone times nothing
        shift = (rounds_done + wave) % max(1, len(live))
        for worker in live[shift:] + live[:shift]:
            if not _block(worker, rounds_done, plan):
                live.remove(worker)
        rounds_done += 1
        # the machine's reference need not settle: it only reads the machine's speed
        samples = (w.record.samples[wave] for w in live if not _is_metronome(w.record))
        if timing.enough_rounds(samples, rounds_done, time.perf_counter() - started, limits):
            break


MIN_ROUNDS = 5  # a process median needs a few blocks whatever the budget


def _block(worker: _Worker, round_index: int, plan: Plan) -> bool:
    record = worker.record
    number = record.builds[-1].number
    try:
        worker.conn.send(("block", number))
        if not worker.conn.poll(plan.timeout_s or BLOCK_TIMEOUT_S):
            _fail(worker, ModeError("Timeout", "a timed block did not finish in time"))
            return False
        _, seconds, compiles, error = worker.conn.recv()
    except (EOFError, OSError, BrokenPipeError):
        _fail(worker, _crash(worker, plan))
        return False
    if error:
        _fail(worker, ModeError("Error", f"failed while timed: {error}"))
        return False
    if compiles:
        record.dropped.append(
            f"process {worker.wave + 1}, block {round_index + 1}: compiled {compiles} new "
            "graph(s) while timed"
        )
        return True
    record.samples[worker.wave].append(seconds / number * 1e3)
    record.rounds[worker.wave].append(round_index)
    return True


BLOCK_TIMEOUT_S = 600.0  # a block that takes this long without --timeout: the worker hangs


def _stop(worker: _Worker, kill: bool = False) -> None:
    if not kill:
        try:
            worker.conn.send(("stop",))
        except (OSError, BrokenPipeError):
            pass
        worker.process.join(timeout=10)
    if worker.process.is_alive():
        worker.process.kill()
        worker.process.join(timeout=10)
    worker.conn.close()


def _timeout_text(plan: Plan, what: str) -> str:
    return f"timed out after {plan.timeout_s:g} s while {what} (process killed)"

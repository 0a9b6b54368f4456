"""`advisor run --ranks N`: data-parallel training measured in N rank processes at once, merged
into one record.

Each rank is `python -m advisor.measure.rank_worker TASK RESULT` (`advisor.measure.rank_worker`)
with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1 and a free MASTER_PORT: it joins the
process group (gloo on CPU, nccl on CUDA), builds the target (whose factory wraps its model in
DistributedDataParallel), measures it as an in-process run does, in lockstep with the others
(`advisor.measure.lockstep`), and writes its `Measurements`. All ranks run in process groups of
their own (`advisor.core.processes.run_processes`): when one fails, runs out of `--timeout` or
the user presses Ctrl-C, all are killed. Only the loopback interface is used.

The merge keeps every rank's modes (`RankTimings`); the step is the slowest rank's default-mode
median (the others wait for it in each all-reduce), and that rank's capture, profile and
what-ifs are the record's. Breaks are matched across ranks by identity
(`advisor.core.identity`); a rank whose breaks differ from the step rank's gets a note.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

from advisor.core.artifacts import Measurements, RankTimings, WorkerEnvironment
from advisor.core.errors import AdvisorError
from advisor.core.identity import BreakIdentity, match
from advisor.core.model import Note, Settings
from advisor.core.processes import Launch, ProcessOutcome, run_processes
from advisor.core.serial import message_from_json, message_to_json
from advisor.measure import environment, torch_adapter
from advisor.measure.isolate import child_environment, last_line_of, params_json
from advisor.measure.pipeline import MeasureInterrupted, Progress, RunOptions, workload_info
from advisor.measure.workload import check_target

LOOPBACK = "127.0.0.1"
ERROR_EXIT = 3  # a rank that wrote its one-line error (bad input) as its result


@dataclass(frozen=True)
class RankTask:
    """What every rank measures (each reads its rank from the environment)."""

    target: str
    params_json: str  # the factory's keyword arguments, a JSON object
    device: str
    settings: Settings
    modes: tuple[str, ...]


@dataclass(frozen=True)
class RankResult:
    """What one rank measured, or the one-line error of bad input (`error`)."""

    rank: int
    measurements: Measurements | None = None
    error: str | None = None


def free_port() -> int:
    """A TCP port free on the loopback interface now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def loopback_interface() -> str | None:
    """The name of the loopback network interface ("lo" on Linux), for gloo and NCCL to bind
    to; None where it cannot be told."""
    with contextlib.suppress(OSError, AttributeError):
        names = [name for _, name in socket.if_nameindex()]
        return next((n for n in names if n == "lo" or n.startswith("lo")), None)
    return None


def rank_environment(rank: int, world: int, port: int, threads: int | None) -> dict[str, str]:
    env = child_environment()
    env.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_WORLD_SIZE=str(world),
        MASTER_ADDR=LOOPBACK,
        MASTER_PORT=str(port),
    )
    interface = loopback_interface()
    if interface is not None:
        env.update(GLOO_SOCKET_IFNAME=interface, NCCL_SOCKET_IFNAME=interface)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    return env


def rank_threads(settings: Settings) -> int | None:
    """Each rank's threads: as asked, else the CPUs this process may use shared out."""
    if settings.threads is not None:
        return settings.threads
    cpus = environment.cpu_affinity()
    return max(1, len(cpus) // settings.ranks) if cpus else None


def measure_ranks(options: RunOptions, device: str, progress: Progress) -> Measurements:
    """Measure the target in `options.settings.ranks` processes at once and merge them.
    Ctrl-C kills every rank and raises `MeasureInterrupted` with an empty, incomplete record."""
    check_target(options.target, options.params)  # bad targets fail here, not in N ranks
    _check_gpus(device, options.settings.ranks)
    settings = replace(options.settings, threads=rank_threads(options.settings))
    options = replace(options, settings=settings)
    task = RankTask(options.target, params_json(options.params), device, settings, options.modes)
    started = time.perf_counter()
    progress(
        f"measuring in {settings.ranks} data-parallel ranks at once (rank 0's progress shown; "
        "every count fixed so the ranks stay in lockstep)..."
    )
    try:
        results = _run_ranks(task, settings)
    except KeyboardInterrupt:
        info = workload_info(options.target, options, device)
        empty = Measurements(info, environment.unknown(), settings, incomplete=True)
        raise MeasureInterrupted(empty) from None
    merged = merge_ranks(results, settings)
    return replace(merged, wall_s=time.perf_counter() - started)


def _check_gpus(device: str, ranks: int) -> None:
    """On CUDA each rank takes a GPU of its own (NCCL cannot put two ranks on one)."""
    if not device.startswith("cuda"):
        return
    found = torch_adapter.cuda_device_count()
    if found < ranks:
        raise AdvisorError(
            f"--ranks {ranks} on CUDA needs {ranks} GPUs (one per rank); {found} found"
        )


def _run_ranks(task: RankTask, settings: Settings) -> list[Measurements]:
    world = settings.ranks
    with tempfile.TemporaryDirectory(prefix="advisor-ranks-") as folder:
        base = Path(folder)
        (base / "task.json").write_text(message_to_json(task), encoding="utf-8")
        port = free_port()
        with contextlib.ExitStack() as files:
            logs = [files.enter_context(open(base / f"stderr{r}", "wb")) for r in range(world)]
            launches = [
                Launch(
                    _command(base / "task.json", base / f"result{r}.json"),
                    rank_environment(r, world, port, settings.threads),
                    stderr=_live_stderr(logs[r]) if r == 0 else logs[r],
                )
                for r in range(world)
            ]
            outcomes = run_processes(launches, settings.timeout_s)
        return [_read(base, r, outcomes, settings.timeout_s) for r in range(world)]


def _live_stderr(fallback: IO[bytes]) -> IO[bytes] | int:
    """This process's stderr, so rank 0's progress shows as it goes; its log file where
    stderr is not a real file (a test capturing it)."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return fallback


def _command(task: Path, result: Path) -> list[str]:
    return [sys.executable, "-m", "advisor.measure.rank_worker", str(task), str(result)]


def _read(
    base: Path, rank: int, outcomes: list[ProcessOutcome], timeout_s: float | None
) -> Measurements:
    """Rank `rank`'s measurements, or an AdvisorError naming the rank that failed first."""
    result_path = base / f"result{rank}.json"
    result = (
        message_from_json(RankResult, result_path.read_text("utf-8"))
        if result_path.is_file()
        else None
    )
    if result is not None and result.measurements is not None:
        return result.measurements
    if result is not None and result.error:
        raise AdvisorError(f"rank {rank}: {result.error}")
    culprit = _first_failure(outcomes)
    raise AdvisorError(_failure(culprit, outcomes[culprit], base, timeout_s))


def _first_failure(outcomes: list[ProcessOutcome]) -> int:
    failed = [i for i, o in enumerate(outcomes) if not o.stopped and o.returncode != 0]
    return min(failed, key=lambda i: outcomes[i].wall_s) if failed else 0


def _failure(rank: int, outcome: ProcessOutcome, base: Path, timeout_s: float | None) -> str:
    if outcome.launch_error:
        return f"cannot start the ranks: {outcome.launch_error}"
    if outcome.timed_out:
        return f"the ranks timed out after {timeout_s or 0:g} s (every rank killed)"
    last = last_line_of(base / f"stderr{rank}")
    signal = outcome.signal
    how = f"was killed by {signal}" if signal else f"exited with code {outcome.returncode}"
    return f"rank {rank} {how}" + (f": {last}" if last else "") + " (every rank killed)"


# --- the merge --------------------------------------------------------------------------------


def merge_ranks(results: list[Measurements], settings: Settings) -> Measurements:
    """One record of every rank's: each rank's modes side by side, the slowest rank's default
    median as the step and its capture, profile and what-ifs as the record's, a note for each
    rank whose breaks differ from that rank's. `settings` are the run's (each rank measured
    with the lockstep variant of them)."""
    if not results:
        raise AdvisorError("no rank measured anything")
    timings = tuple(
        RankTimings(rank, m.modes, len(m.capture.sites)) for rank, m in enumerate(results)
    )
    step = max(range(len(results)), key=lambda r: _default_median(results[r]))
    main = results[step]
    notes = [*main.notes, *break_notes(results, step)]
    workers = tuple(
        WorkerEnvironment(f"rank {rank}", m.environment) for rank, m in enumerate(results)
    )
    return replace(
        main,
        settings=settings,
        ranks=timings,
        step_rank=step,
        notes=tuple(notes),
        workers=workers,
        incomplete=any(m.incomplete for m in results),
    )


def _default_median(measurements: Measurements) -> float:
    default = measurements.mode("default")
    if default is None or default.latency is None:
        return float("-inf")
    return default.latency.median_ms


def break_notes(results: list[Measurements], step: int) -> list[Note]:
    """A note per rank whose breaks are not the step rank's, matched by identity: how many of
    the step rank's it lacks and how many it has that the step rank does not."""

    def identities(m: Measurements) -> list[BreakIdentity]:
        return [BreakIdentity.of(s, None) for s in m.capture.sites]

    main = identities(results[step])
    notes = []
    for rank, m in enumerate(results):
        if rank == step:
            continue
        matching = match(main, identities(m))
        extra = sum(1 for old in matching.old_of_new if old is None)
        if extra or matching.gone:
            values = {
                "missing": float(len(matching.gone)),
                "extra": float(extra),
                "step": float(step),
            }
            notes.append(Note("rank_breaks_differ", f"rank {rank}", values=values))
    return notes

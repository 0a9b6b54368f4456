"""Timing: warm callables timed in blocks, interleaved round by round, until each median is
known well enough or the time budget runs out.

Method (after PyTorch's dynamo benchmark harness and `torch.utils.benchmark`): each callable is
warmed up, then timed in blocks of `number` calls with the device synchronised before and after
each block; the callables are interleaved round by round (rotating which goes first) so machine
drift hits them all alike; samples are per-call means, raw samples kept in timing order.
Adaptive sampling (like `adaptive_autorange`): after `repeats` rounds, rounds go on until every
median has a 95% interval within `target_ci` of it or the budget runs out. The clock and the
device synchronisation are injected (`Timer`), so the logic is tested deterministically.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from advisor.core.errors import first_line
from advisor.core.model import LatencyStats, Note, Settings
from advisor.core.stats import latency_stats, relative_half_width
from advisor.measure import torch_adapter


class Timer(Protocol):
    def now(self) -> float: ...

    def sync(self) -> None: ...

    def time_block(self, call: Callable[[], Any], number: int) -> float:
        """Seconds taken by `number` calls, the device synchronised before and after."""
        ...


Watch = Callable[[], Callable[[], float | None]]


@dataclass
class WallTimer:
    """perf_counter timing with an explicit device synchronisation (a no-op on CPU). `watch`,
    where given, measures how much of the CPUs other processes used while timing."""

    clock: Callable[[], float] = time.perf_counter
    synchronize: Callable[[], None] = lambda: None
    watch: Watch | None = None

    def now(self) -> float:
        return self.clock()

    def sync(self) -> None:
        self.synchronize()

    def time_block(self, call: Callable[[], Any], number: int) -> float:
        self.synchronize()
        start = self.clock()
        for _ in range(number):
            call()
        self.synchronize()
        return self.clock() - start


@dataclass
class CudaEventTimer:
    """CUDA events around each block: device time from the first launch to the last kernel."""

    device: str
    watch: Watch | None = None

    def now(self) -> float:
        torch_adapter.cuda_synchronize(self.device)
        return time.perf_counter()

    def sync(self) -> None:
        torch_adapter.cuda_synchronize(self.device)

    def time_block(self, call: Callable[[], Any], number: int) -> float:
        return torch_adapter.cuda_event_seconds(call, number, self.device)


def timer_for(device: str) -> Timer:
    from advisor.measure.cpus import contention_watch

    if device.startswith("cuda"):
        return CudaEventTimer(device, watch=contention_watch)
    return WallTimer(watch=contention_watch)


@dataclass
class SampleLog:
    """Block sizes and samples (per-call seconds) by label, filled in as they are taken, so an
    interrupted run keeps the rounds it finished."""

    number: dict[str, int] = field(default_factory=dict)
    samples: dict[str, list[float]] = field(default_factory=dict)


@dataclass
class Timing:
    """What `interleaved_samples` measured: each label's latency (samples in timing order,
    blocks taken, the median's interval and whether it reached the target), and notes."""

    stats: dict[str, LatencyStats]
    notes: list[Note] = field(default_factory=list)


MIN_ROUNDS = 3  # whatever the budget: a median and a spread need a few samples
MAX_ROUNDS = 10_000  # a bound on rounds whatever the budget (a clock that barely moves)


def interleaved_samples(
    runs: list[tuple[str, Callable[[], Any]]],
    settings: Settings,
    timer: Timer,
    log: SampleLog | None = None,
) -> Timing:
    """Warm up each callable, calibrate its block size, then time them round-robin.

    Every round times one block of each callable, rotating which goes first, so drift hits them
    alike; all callables stay in every round until each one's median has a 95% interval within
    `settings.target_ci` of it (at least `settings.repeats` rounds), or the next round, at the
    mean length of the rounds so far, would exceed `settings.budget_s` (judged from the rounds
    themselves, so one slow early block does not cut the minimum). Keeping them together keeps
    the rounds balanced: a callable that settled early still shares every later round's drift
    with the others. With `log`, block sizes and samples are kept in it as they are taken.
    """
    notes: list[Note] = []
    live = _Live(list(runs), notes)
    number = _block_sizes(live, settings, timer)
    log = log if log is not None else SampleLog()
    log.number.update(number)
    log.samples.update({label: [] for label, _ in live.runs})
    samples = log.samples
    watch: Watch | None = getattr(timer, "watch", None)
    contention = watch() if watch is not None else None
    start = timer.now()
    rounds = 0
    while live.runs and not _enough(samples, rounds, timer.now() - start, settings):
        shift = rounds % len(live.runs)
        for label, call in live.runs[shift:] + live.runs[:shift]:
            try:
                elapsed = timer.time_block(call, number[label])
            except Exception as exc:
                live.drop(label, exc, "failed_while_timed")
                samples.pop(label, None)
                continue
            samples[label].append(elapsed / number[label])
        rounds += 1
    if live.runs and rounds < settings.repeats:
        notes.append(
            Note(
                "budget_short",
                values={
                    "rounds": rounds,
                    "repeats": settings.repeats,
                    "budget_s": settings.budget_s,
                },
            )
        )
    target = settings.target_ci if settings.target_ci > 0 else None
    stats = {
        label: latency_stats(values, number[label], target)
        for label, values in samples.items()
        if values and label in number
    }
    share = contention() if contention is not None else None
    stats, contended = _with_contention(stats, share)
    notes.extend(contended)
    notes.extend(_target_notes(stats, settings))
    return Timing(stats, notes)


def _with_contention(
    stats: dict[str, LatencyStats], share: float | None
) -> tuple[dict[str, LatencyStats], list[Note]]:
    """Each latency with the share of its CPUs others used; past CONTENDED_SHARE its threads
    were descheduled while timed, so no interval of it is called met."""
    from advisor.core.policy import CONTENDED_SHARE

    if share is None:
        return stats, []
    contended = share > CONTENDED_SHARE
    out = {
        label: replace(
            lat,
            contention=share,
            target_met=False if contended and lat.target_met is not None else lat.target_met,
        )
        for label, lat in stats.items()
    }
    notes = [Note("contended", ", ".join(stats), values={"share": share})] if contended else []
    return out, notes


@dataclass
class _Live:
    """The callables still being timed; one that fails is dropped with a note."""

    runs: list[tuple[str, Callable[[], Any]]]
    notes: list[Note]

    def drop(self, label: str, exc: Exception, kind: str) -> None:
        # A mode can fail after its first calls: a recompile limit hit under fullgraph=True,
        # or a mode compiled before the last `reset` that recompiles here and finds its frame
        # marked skipped by a later mode's compile ("found no compiled frames"). It keeps its
        # first-call result but loses its timing; the other modes go on.
        self.notes.append(Note(kind, label, detail=f"{type(exc).__name__}: {first_line(exc)}"))
        self.runs[:] = [r for r in self.runs if r[0] != label]


def _block_sizes(live: _Live, settings: Settings, timer: Timer) -> dict[str, int]:
    """Warm each callable up and pick its calls per block: enough that a block lasts
    `min_block_s` (short blocks measure the clock and the loop more than the call)."""
    number: dict[str, int] = {}
    for label, call in list(live.runs):
        try:
            for _ in range(settings.warmup):
                call()
            single = max(timer.time_block(call, 1), 1e-7)
        except Exception as exc:
            live.drop(label, exc, "failed_in_warmup")
            continue
        # (the tiny slack keeps float noise from adding a call: 2 ms / 1 ms is 2 blocks, not 3)
        number[label] = max(1, min(10_000, math.ceil(settings.min_block_s / single - 1e-6)))
    return number


def _enough(
    samples: Mapping[str, list[float]], rounds: int, elapsed_s: float, settings: Settings
) -> bool:
    """Whether to stop after `rounds` rounds that took `elapsed_s` (`enough_rounds`)."""
    return enough_rounds(
        samples.values(),
        rounds,
        elapsed_s,
        RoundLimits(MIN_ROUNDS, settings.repeats, settings.budget_s, settings.target_ci),
    )


@dataclass(frozen=True)
class RoundLimits:
    """When interleaved rounds stop: never before `least` (or `repeats` if fewer), whatever the
    budget; then `repeats` while `budget_s` lasts; then, with `target_ci` > 0, until every
    median's 95% interval is within that fraction of it, while the budget lasts."""

    least: int
    repeats: int
    budget_s: float
    target_ci: float


def enough_rounds(
    samples: Iterable[Sequence[float]], rounds: int, elapsed_s: float, limits: RoundLimits
) -> bool:
    """Whether to stop after `rounds` rounds that took `elapsed_s`, the samples of each timed
    callable so far in `samples` (the quick protocol's rounds and a replicated wave's alike)."""
    if rounds < min(limits.least, limits.repeats):
        return False
    # the next round, at the mean round's length, would pass the budget (slack for float noise)
    if rounds >= MAX_ROUNDS or elapsed_s * (rounds + 1) / rounds > limits.budget_s + 1e-9:
        return True
    if rounds < limits.repeats:
        return False
    if limits.target_ci <= 0:
        return True
    return all(relative_half_width(v) <= limits.target_ci for v in samples if v)


def _target_notes(stats: Mapping[str, LatencyStats], settings: Settings) -> list[Note]:
    return [
        Note(
            "target_missed",
            label,
            values={
                "relative_ci": lat.relative_ci or 0.0,
                "blocks": lat.n,
                "target_ci": settings.target_ci,
                "budget_s": settings.budget_s,
            },
        )
        for label, lat in stats.items()
        if lat.target_met is False and (lat.relative_ci or 0.0) > settings.target_ci
    ]

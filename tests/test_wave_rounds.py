"""How many rounds a replicated wave times: at least `--repeats`, then more while an arm's median
in its process is still short of `--target-ci`, within the wave's budget."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from advisor.core.measured import Settings
from advisor.measure import replicate
from advisor.measure.arms import METRONOME_ARM, ArmTask, mode_arm
from advisor.measure.timing import RoundLimits, enough_rounds

BLOCK_S = 0.1  # each fake block takes this long on the fake clock


def _workers(*modes: str) -> list[replicate._Worker]:
    workers = []
    for mode in modes:
        arm = METRONOME_ARM if mode == METRONOME_ARM.label else mode_arm(mode)
        record = replicate.ArmRecord(ArmTask(arm, "t.py:f", "{}", "cpu", Settings()))
        record.samples.append([])
        record.rounds.append([])
        workers.append(replicate._Worker(record, process=None, conn=None, wave=0))  # type: ignore[arg-type]
    return workers


def _fake_blocks(monkeypatch: pytest.MonkeyPatch, values: dict[str, Iterator[float]]) -> None:
    """Each block of an arm appends its next value and moves the clock on by BLOCK_S."""
    clock = SimpleNamespace(now=0.0)

    def block(worker: replicate._Worker, round_index: int, _plan: replicate.Plan) -> bool:
        clock.now += BLOCK_S
        worker.record.samples[worker.wave].append(next(values[worker.record.label]))
        worker.record.rounds[worker.wave].append(round_index)
        return True

    monkeypatch.setattr(replicate, "_block", block)
    monkeypatch.setattr(replicate, "time", SimpleNamespace(perf_counter=lambda: clock.now))


def _steady() -> Iterator[float]:
    while True:
        yield 10.0


def _varying() -> Iterator[float]:
    """A step whose calls vary a lot (the kornia CNN's blocks: 9 to 22 ms)."""
    while True:
        yield from (9.0, 15.0, 22.0, 11.0)


def test_steady_arms_stop_at_the_repeats(monkeypatch: pytest.MonkeyPatch) -> None:
    workers = _workers("default", "eager")
    _fake_blocks(monkeypatch, {"default": _steady(), "eager": _steady()})
    replicate._time_rounds(workers, 0, replicate.Plan(waves=1, rounds=8, target_ci=0.02))
    assert [len(w.record.samples[0]) for w in workers] == [8, 8]


def test_a_varying_arm_keeps_every_arm_timing_until_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workers = _workers("default", "eager")
    _fake_blocks(monkeypatch, {"default": _varying(), "eager": _steady()})
    plan = replicate.Plan(waves=1, rounds=8, target_ci=0.02, budget_s=6.0)
    replicate._time_rounds(workers, 0, plan)
    # two arms at 0.1 s a block: 0.2 s a round, so 30 rounds fill the 6 s budget; the steady
    # arm is timed in every one of them, so the pairing by round holds
    assert [len(w.record.samples[0]) for w in workers] == [30, 30]
    assert workers[1].record.rounds[0] == list(range(30))


def test_without_a_target_a_wave_times_exactly_its_rounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workers = _workers("default")
    _fake_blocks(monkeypatch, {"default": _varying()})
    replicate._time_rounds(workers, 0, replicate.Plan(waves=1, rounds=8, target_ci=0.0))
    assert len(workers[0].record.samples[0]) == 8


def test_the_machine_reference_neither_holds_a_wave_nor_times_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workers = _workers("default", METRONOME_ARM.label)
    _fake_blocks(monkeypatch, {"default": _steady(), METRONOME_ARM.label: _varying()})
    replicate._time_rounds(workers, 0, replicate.Plan(waves=1, rounds=8, target_ci=0.02))
    assert [len(w.record.samples[0]) for w in workers] == [8, 8]  # its spread kept no one

    def failing(worker: replicate._Worker, round_index: int, _plan: replicate.Plan) -> bool:
        if worker.record.label == METRONOME_ARM.label:
            worker.record.samples[0].append(10.0)
            return True
        return False  # the arm's worker crashed

    workers = _workers("default", METRONOME_ARM.label)
    monkeypatch.setattr(replicate, "_block", failing)
    replicate._time_rounds(workers, 0, replicate.Plan(waves=1, rounds=8, target_ci=0.02))
    assert len(workers[1].record.samples[0]) <= 1  # not the rounds of a wave with no arm left


def test_the_least_rounds_hold_whatever_the_budget() -> None:
    limits = RoundLimits(least=5, repeats=8, budget_s=1.0, target_ci=0.02)
    steady = [[10.0] * 4]
    assert not enough_rounds(steady, 4, elapsed_s=30.0, limits=limits)
    assert enough_rounds(steady, 5, elapsed_s=30.0, limits=limits)  # over budget: stop
    assert not enough_rounds(steady, 6, elapsed_s=0.1, limits=limits)  # short of the repeats
    assert enough_rounds([[10.0] * 8], 8, elapsed_s=0.1, limits=limits)
    assert not enough_rounds([[9.0, 15.0, 22.0, 11.0] * 2], 8, elapsed_s=0.1, limits=limits)
    fewer = RoundLimits(least=5, repeats=2, budget_s=1.0, target_ci=0.0)
    assert enough_rounds([[10.0, 10.0]], 2, elapsed_s=0.1, limits=fewer)


def test_a_process_median_need_not_be_finer_than_the_run_level_spread() -> None:
    from advisor.core.replication import process_target

    assert process_target(0.02, 0.025) == pytest.approx(0.049)  # the floor: 1.96 x 2.5%
    assert process_target(0.10, 0.025) == 0.10  # a coarser target stands
    assert process_target(0.0, 0.025) == 0.0  # no target: exactly the rounds

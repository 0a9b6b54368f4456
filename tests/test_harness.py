"""Harness timing logic with an injected clock: no real compile, fully deterministic."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable
from typing import Any

import pytest
import torch

from advisor.core.errors import AdvisorError
from advisor.core.model import Settings
from advisor.measure import cpus as measure_cpus
from advisor.measure import harness
from advisor.measure import timing as measure_timing
from advisor.measure.torch_adapter import outputs
from advisor.measure.workload import Workload


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0
        self.log: list[str] = []
        self.drift_per_s = 0.0

    def now(self) -> float:
        return self.t

    def spend(self, label: str, seconds: float) -> None:
        self.log.append(label)
        self.t += seconds * (1.0 + self.drift_per_s * self.t)


COSTS = {"eager": 1e-3, "default": 0.5e-3, "fullgraph": 0.25e-3}


def make_run(
    clock: FakeClock,
    costs: dict[str, float] = COSTS,
    fullgraph_fails: bool = False,
    settings: Settings | None = None,
    fullgraph_fails_after: int | None = None,
    modes: tuple[str, ...] = ("eager", "default", "fullgraph"),
    stateful: bool = False,
) -> harness.HarnessRun:
    steps = 0

    def fn(x: torch.Tensor) -> torch.Tensor:
        nonlocal steps
        clock.spend("eager", costs["eager"])
        steps += 1
        return x * (steps if stateful else 2)

    def fake_compile(f: Callable[..., Any], backend: Any, fullgraph: bool) -> Callable[..., Any]:
        label = backend.label

        calls = 0

        def compiled(x: torch.Tensor) -> torch.Tensor:
            nonlocal calls
            calls += 1
            if fullgraph and fullgraph_fails:
                raise RuntimeError("Failed to trace builtin operator\n  Explanation: nope")
            if fullgraph and fullgraph_fails_after is not None and calls > fullgraph_fails_after:
                raise RuntimeError("fullgraph=True found no compiled frames.\nmore")
            clock.spend(label, costs[label])
            return x * 2

        return compiled

    timer = measure_timing.WallTimer(clock=clock.now)
    return harness.measure(
        Workload(fn, (torch.ones(3),), {}, "fake"),
        settings or Settings(warmup=2, repeats=5, budget_s=100.0, min_block_s=2e-3),
        "cpu",
        timer=timer,
        options=harness.HarnessOptions(modes=modes, compile_fn=fake_compile, memory=False),
    )


def test_medians_blocks_and_sample_counts() -> None:
    run = make_run(FakeClock())
    by_mode = {m.mode: m for m in run.modes}
    assert [m.mode for m in run.modes] == ["eager", "default", "fullgraph"]
    for mode, cost in COSTS.items():
        lat = by_mode[mode].latency
        assert lat is not None
        assert lat.n == 5
        assert lat.median_ms == pytest.approx(cost * 1e3)
        assert lat.iqr_ms == pytest.approx(0.0, abs=1e-9)
        # a block lasts at least min_block_s: 2 ms / cost calls per block
        assert lat.calls_per_sample == round(2e-3 / cost)
    assert by_mode["default"].matches_eager is True
    assert by_mode["eager"].first_call_s == pytest.approx(1e-3)
    assert by_mode["default"].first_call_s == pytest.approx(0.5e-3)


def test_warmup_calls_precede_timing() -> None:
    clock = FakeClock()
    make_run(clock, settings=Settings(warmup=4, repeats=3, budget_s=100.0, min_block_s=1e-3))
    # default mode: first call + 4 warm-up calls in the compile phase, then 4 more warm-up
    # calls and one calibration call before any timed block.
    first_default = clock.log.index("default")
    assert clock.log[first_default : first_default + 5] == ["default"] * 5


def test_modes_are_interleaved_with_rotation() -> None:
    clock = FakeClock()
    costs = {"eager": 1e-3, "default": 1e-3, "fullgraph": 1e-3}
    make_run(clock, costs, settings=Settings(warmup=0, repeats=3, budget_s=100.0, min_block_s=1e-3))
    timed = clock.log[-9:]  # 3 rounds x 3 modes x 1 call per block
    assert timed == [
        "eager",
        "default",
        "fullgraph",
        "default",
        "fullgraph",
        "eager",
        "fullgraph",
        "eager",
        "default",
    ]


def test_interleaving_spreads_drift_over_modes() -> None:
    clock = FakeClock()
    clock.drift_per_s = 5.0  # the machine slows down steadily
    costs = {"eager": 1e-3, "default": 1e-3, "fullgraph": 1e-3}
    run = make_run(
        clock, costs, settings=Settings(warmup=0, repeats=30, budget_s=100.0, min_block_s=1e-3)
    )
    medians = [m.latency.median_ms for m in run.modes if m.latency]
    assert max(medians) / min(medians) < 1.02


def test_budget_limits_rounds_and_warns() -> None:
    run = make_run(
        FakeClock(), settings=Settings(warmup=0, repeats=50, budget_s=0.03, min_block_s=2e-3)
    )
    lat = run.modes[0].latency
    assert lat is not None and lat.n == 5  # 0.03 s budget / ~6 ms per round
    (budget,) = [n for n in run.notes if n.kind == "budget_short"]
    assert budget.values == {"rounds": 5, "repeats": 50, "budget_s": 0.03}


def test_fullgraph_failure_is_a_finding_not_a_crash() -> None:
    run = make_run(FakeClock(), fullgraph_fails=True)
    fullgraph = next(m for m in run.modes if m.mode == "fullgraph")
    assert fullgraph.status == "failed"
    assert fullgraph.error is not None
    assert fullgraph.error.type == "RuntimeError"
    assert fullgraph.error.message == "Failed to trace builtin operator"
    assert fullgraph.latency is None
    assert set(run.calls) == {"eager", "default"}


def test_mode_that_fails_when_called_again_is_kept_but_not_timed() -> None:
    # e.g. fullgraph recompiling after the reset before default, on a frame default's compile
    # marked as skipped: its first call stands, the timing goes, with a warning.
    run = make_run(FakeClock(), fullgraph_fails_after=1 + 2)  # its first call and warm-up
    by_mode = {m.mode: m for m in run.modes}
    assert by_mode["fullgraph"].status == "ok" and by_mode["fullgraph"].matches_eager
    assert by_mode["fullgraph"].latency is None
    assert by_mode["default"].latency is not None and by_mode["eager"].latency is not None
    assert "fullgraph" not in run.calls
    (note,) = [n for n in run.notes if n.subject == "fullgraph"]
    assert note.kind == "failed_in_warmup"
    assert "found no compiled frames." in note.detail and "\n" not in note.detail


def test_mode_that_fails_while_being_timed_loses_only_its_timing() -> None:
    # e.g. fullgraph=True hitting the recompile limit after a few calls
    run = make_run(FakeClock(), fullgraph_fails_after=30)
    by_mode = {m.mode: m for m in run.modes}
    assert by_mode["fullgraph"].latency is None and by_mode["fullgraph"].status == "ok"
    assert by_mode["default"].latency is not None and by_mode["default"].latency.n == 5
    assert by_mode["eager"].latency is not None and by_mode["eager"].latency.n == 5
    assert set(run.calls) == {"eager", "default"}
    assert [n.kind for n in run.notes if n.subject == "fullgraph"] == ["failed_while_timed"]


def test_output_that_changes_every_call_is_not_compared() -> None:
    # e.g. a training step: eager's second call already differs from its first, so a compiled
    # mode's different output says nothing; no verdict on matching, and a warning.
    run = make_run(FakeClock(), stateful=True)
    by_mode = {m.mode: m for m in run.modes}
    assert by_mode["default"].matches_eager is None and by_mode["fullgraph"].matches_eager is None
    assert run.reference_output is harness.NO_REFERENCE
    assert [n.kind for n in run.notes] == ["eager_not_reproducible"]
    deterministic = make_run(FakeClock())
    assert {m.matches_eager for m in deterministic.modes if m.mode != "eager"} == {True}
    assert not [n for n in deterministic.notes if n.kind == "eager_not_reproducible"]


def test_eager_failure_stops_with_one_line_error() -> None:
    def broken(x: torch.Tensor) -> torch.Tensor:
        raise ValueError("bad shapes\nsecond line")

    with pytest.raises(AdvisorError, match=r"fails in eager mode: ValueError: bad shapes$"):
        harness.measure(
            Workload(broken, (torch.ones(1),)),
            Settings(),
            "cpu",
            options=harness.HarnessOptions(memory=False),
        )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (Settings(repeats=0), "repeats"),
        (Settings(repeats=-3), "repeats"),
        (Settings(warmup=-1), "warm-up"),
        (Settings(budget_s=0), "budget"),
        (Settings(threads=0), "threads"),
    ],
)
def test_bad_settings(settings: Settings, message: str) -> None:
    with pytest.raises(AdvisorError, match=message):
        harness.measure(
            Workload(lambda: 1), settings, "cpu", options=harness.HarnessOptions(memory=False)
        )


def test_threads_restored() -> None:
    before = torch.get_num_threads()
    make_run(FakeClock(), settings=Settings(warmup=0, repeats=3, threads=1, min_block_s=1e-3))
    assert torch.get_num_threads() == before


def test_cuda_without_gpu_is_an_error() -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(AdvisorError, match="no CUDA device"):
        harness.resolve_device("cuda")
    assert harness.resolve_device("auto") == "cpu"
    with pytest.raises(AdvisorError, match="unknown device"):
        harness.resolve_device("tpu")


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        (torch.ones(4), torch.ones(4) + 5e-5, True),
        (torch.ones(4), torch.ones(4) + 1e-2, False),
        (torch.ones(4, dtype=torch.float16), torch.ones(4, dtype=torch.float16) * 1.0009, True),
        (torch.ones(4, dtype=torch.float64), torch.ones(4, dtype=torch.float64) + 1e-5, False),
        (torch.arange(4), torch.arange(4), True),
        (torch.arange(4), torch.arange(4) + 1, False),
        ((torch.ones(2), {"a": torch.zeros(1)}), (torch.ones(2), {"a": torch.zeros(1)}), True),
        ((torch.ones(2),), [torch.ones(2)], False),
        (torch.ones(2), torch.ones(3), False),
        (torch.tensor([float("nan")]), torch.tensor([float("nan")]), True),
        (3, 3, True),
    ],
)
def test_compare_outputs(expected: Any, actual: Any, ok: bool) -> None:
    assert outputs.compare_outputs(expected, actual).matches is ok


# --- adaptive sampling ------------------------------------------------------------------------


def median_interval_rank(n: int, confidence: float = 0.95) -> int:
    """The largest k whose order statistics [x_(k), x_(n-k+1)] cover the median with at least
    `confidence`, from the binomial sum itself (0 when no such interval exists)."""
    best = 0
    for k in range(1, n // 2 + 1):
        tail = sum(math.comb(n, i) for i in range(k)) / 2**n
        if 1 - 2 * tail >= confidence:
            best = k
    return best


def scheduled(clock: FakeClock, label: str, costs: Callable[[int], float]) -> Callable[[], None]:
    """A callable whose i-th call (from 0, warm-up and calibration included) costs costs(i)."""
    calls = 0

    def call() -> None:
        nonlocal calls
        clock.spend(label, costs(calls))
        calls += 1

    return call


# One call per block (min_block_s below any cost), no warm-up: each callable's first call
# calibrates the block size, the rest are samples.
ADAPTIVE = Settings(warmup=0, repeats=20, budget_s=100.0, min_block_s=1e-6, target_ci=0.02)
STEADY_MS = 1.0


def test_rounds_go_on_until_every_median_interval_reaches_the_target() -> None:
    clock = FakeClock()
    slow = 9  # the noisy callable's first 9 samples are 50% slower, the rest steady
    noisy = scheduled(clock, "noisy", lambda i: 1.5e-3 if 1 <= i < 1 + slow else 1e-3)
    steady = scheduled(clock, "steady", lambda i: 1e-3)
    timing = measure_timing.interleaved_samples(
        [("steady", steady), ("noisy", noisy)], ADAPTIVE, measure_timing.WallTimer(clock=clock.now)
    )
    # The median is a steady 1 ms from the start (fewer than half the samples are slow); the
    # interval's upper end, the (n-k+1)-th smallest sample, is 1.5 ms (50% off) until k > 9.
    expected = next(n for n in range(ADAPTIVE.repeats, 1000) if median_interval_rank(n) > slow)
    assert expected > ADAPTIVE.repeats
    noisy_lat, steady_lat = timing.stats["noisy"], timing.stats["steady"]
    assert noisy_lat.n == expected and steady_lat.n == expected  # rounds keep both
    assert noisy_lat.target_met is True and steady_lat.target_met is True
    assert noisy_lat.ci_ms == pytest.approx((STEADY_MS, STEADY_MS))
    assert noisy_lat.median_ms == pytest.approx(STEADY_MS)
    assert not timing.notes


def test_a_steady_run_stops_at_the_minimum_rounds() -> None:
    clock = FakeClock()
    calls = [(m, scheduled(clock, m, lambda i: 1e-3)) for m in ("a", "b")]
    timing = measure_timing.interleaved_samples(
        calls, ADAPTIVE, measure_timing.WallTimer(clock=clock.now)
    )
    assert {lat.n for lat in timing.stats.values()} == {ADAPTIVE.repeats}
    assert all(lat.target_met for lat in timing.stats.values())


def test_budget_ends_the_rounds_and_the_missed_target_is_reported() -> None:
    clock = FakeClock()
    # alternating 1 and 1.5 ms: the median's interval never narrows below 1 ms .. 1.5 ms
    noisy = scheduled(clock, "noisy", lambda i: 1.5e-3 if i % 2 else 1e-3)
    steady = scheduled(clock, "steady", lambda i: 1e-3)
    budget = 0.1
    settings = dataclasses.replace(ADAPTIVE, budget_s=budget)
    timing = measure_timing.interleaved_samples(
        [("steady", steady), ("noisy", noisy)], settings, measure_timing.WallTimer(clock=clock.now)
    )
    lat = timing.stats["noisy"]
    assert lat.target_met is False and timing.stats["steady"].target_met is True
    timed_s = (sum(lat.samples_ms) + sum(timing.stats["steady"].samples_ms)) / 1e3
    longest_round_s = 2.5e-3
    assert budget - 2 * longest_round_s < timed_s <= budget
    (note,) = timing.notes
    assert (note.kind, note.subject, note.values["target_ci"]) == ("target_missed", "noisy", 0.02)
    assert note.values["relative_ci"] > 0.02 and note.values["blocks"] == lat.n


def test_target_zero_takes_exactly_the_minimum_rounds() -> None:
    clock = FakeClock()
    noisy = scheduled(clock, "noisy", lambda i: 1.5e-3 if i % 2 else 1e-3)
    settings = dataclasses.replace(ADAPTIVE, target_ci=0.0)
    timing = measure_timing.interleaved_samples(
        [("noisy", noisy)], settings, measure_timing.WallTimer(clock=clock.now)
    )
    assert timing.stats["noisy"].n == settings.repeats
    assert timing.stats["noisy"].target_met is None
    assert not timing.notes


def test_samples_are_kept_in_timing_order() -> None:
    clock = FakeClock()
    rising = scheduled(clock, "rising", lambda i: (1 + i) * 1e-4)
    settings = dataclasses.replace(ADAPTIVE, target_ci=0.0, repeats=6)
    timing = measure_timing.interleaved_samples(
        [("rising", rising)], settings, measure_timing.WallTimer(clock=clock.now)
    )
    # call 0 sizes the blocks; samples are calls 1..6
    assert timing.stats["rising"].samples_ms == pytest.approx([0.2, 0.3, 0.4, 0.5, 0.6, 0.7])


def test_one_slow_early_block_does_not_cut_the_minimum_rounds() -> None:
    # the budget is judged from the rounds taken: a 30 ms hiccup in the first timed block of a
    # 1 ms callable leaves room for the 20 rounds in 0.1 s (a prediction from that first round
    # alone would allow 3)
    clock = FakeClock()
    hiccup = scheduled(clock, "hiccup", lambda i: 30e-3 if i == 1 else 1e-3)
    steady = scheduled(clock, "steady", lambda i: 1e-3)
    settings = dataclasses.replace(ADAPTIVE, budget_s=0.1)
    timing = measure_timing.interleaved_samples(
        [("hiccup", hiccup), ("steady", steady)],
        settings,
        measure_timing.WallTimer(clock=clock.now),
    )
    assert timing.stats["hiccup"].n == settings.repeats
    assert timing.stats["hiccup"].target_met is True
    assert not timing.notes


@pytest.fixture
def quiet_cpus(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """No CPU busy with another process or claimed by another advisor run, whatever else runs
    beside the tests."""
    monkeypatch.setattr(measure_cpus, "busy_cpus", lambda cpus, window_s=0.3: ())
    monkeypatch.setattr(measure_cpus, "LOCK_DIR", tmp_path / "cpu-locks")


def test_pinned_sets_and_restores_threads_and_cpus(quiet_cpus: None) -> None:
    import os

    if not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs CPU affinity and at least two CPUs")
    cpus, threads = sorted(os.sched_getaffinity(0)), torch.get_num_threads()
    with measure_cpus.pinned(1) as pinned_cpus:
        assert pinned_cpus == (cpus[-1],)
        assert sorted(os.sched_getaffinity(0)) == [cpus[-1]]
        assert torch.get_num_threads() == 1
    assert sorted(os.sched_getaffinity(0)) == cpus
    assert torch.get_num_threads() == threads


def _two_cpus() -> list[int]:
    import os

    if not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs CPU affinity and at least two CPUs")
    return sorted(os.sched_getaffinity(0))


def test_concurrent_runs_pin_to_different_cpus(quiet_cpus: None) -> None:
    """A sweep's workers (or Ray tasks) on one machine: the second run takes another CPU."""
    import os

    cpus = _two_cpus()
    with measure_cpus.claimed(tuple(cpus), 1) as other_run:  # another process's run
        assert other_run == (cpus[-1],)
        with measure_cpus.pinned(1) as pinned_cpus:
            assert pinned_cpus == (cpus[-2],)
            assert sorted(os.sched_getaffinity(0)) == [cpus[-2]]
    with measure_cpus.pinned(1) as pinned_cpus:  # released: the last CPU again
        assert pinned_cpus == (cpus[-1],)


def test_a_cpu_another_process_keeps_busy_is_taken_last(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last CPU is the one pinned to on a quiet machine; held by a busy loop, another."""
    import os

    from advisor.measure import cpus as cpu_claims

    monkeypatch.setattr(cpu_claims, "LOCK_DIR", tmp_path)
    cpus = _two_cpus()
    monkeypatch.setattr(cpu_claims, "busy_cpus", lambda cpus_, window_s=0.3: (cpus[-1],))
    with measure_cpus.pinned(1) as pinned_cpus:
        assert pinned_cpus == (cpus[-2],)
        assert sorted(os.sched_getaffinity(0)) == [cpus[-2]]
    monkeypatch.setattr(cpu_claims, "busy_cpus", lambda cpus_, window_s=0.3: tuple(cpus))
    with measure_cpus.pinned(1) as pinned_cpus:  # all busy: the last, as on a quiet machine
        assert pinned_cpus == (cpus[-1],)


def test_no_free_cpu_means_not_pinned(quiet_cpus: None) -> None:
    import os

    cpus = _two_cpus()
    with measure_cpus.claimed(tuple(cpus), len(cpus)) as others:
        assert others == tuple(cpus)
        with measure_cpus.pinned(1) as pinned_cpus:
            assert pinned_cpus == tuple(cpus)  # sharing a pinned core would halve both runs
            assert torch.get_num_threads() == 1
    assert sorted(os.sched_getaffinity(0)) == cpus


def test_what_if_timing_is_adaptive_too() -> None:
    from advisor.measure.whatif import ab_timing

    clock = FakeClock()
    base = scheduled(clock, "baseline", lambda i: 1e-3)
    variant = scheduled(clock, "variant", lambda i: 1.5e-3 if i % 2 else 0.5e-3)
    settings = dataclasses.replace(ADAPTIVE, budget_s=0.1)
    ab = ab_timing(base, variant, settings, measure_timing.WallTimer(clock=clock.now))
    assert ab.baseline.target_met is True and ab.variant.target_met is False
    assert ab.baseline.n == ab.variant.n > settings.repeats  # went on past the minimum
    assert [(n.kind, n.subject) for n in ab.notes] == [("target_missed", "variant")]


# --- other processes on the CPUs -------------------------------------------------------------


def test_the_share_of_the_cpus_others_used_is_their_busy_time_less_ours() -> None:
    hz = os.sysconf("SC_CLK_TCK")
    start = measure_cpus.CpuTimes({0: 0, 1: 0}, {0: 0, 1: 0}, own_s=0.0, at=0.0)
    # over 1 s on CPUs 0 and 1: 1.5 CPU-seconds busy, of which 0.5 s were ours
    end = measure_cpus.CpuTimes({0: hz, 1: hz // 2}, {0: hz, 1: hz}, own_s=0.5, at=1.0)
    assert measure_cpus.others_share(start, end, (0, 1)) == pytest.approx(0.5)
    assert measure_cpus.others_share(start, end, (0,)) == pytest.approx(0.5)
    assert measure_cpus.others_share(start, start, (0,)) is None


def test_threads_fit_the_free_cpus_and_a_request_that_does_not_fit_is_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(measure_cpus, "cpu_affinity", lambda: (0, 1))
    monkeypatch.setattr(measure_cpus, "busy_cpus", lambda cpus, window_s=0.3: (0,))
    threads, notes = measure_cpus.fitting_threads(None)
    assert threads == 1 and [n.kind for n in notes] == ["threads_chosen"]
    assert notes[0].values == {"busy": 1, "cpus": 2, "free": 1, "threads": 1}
    threads, notes = measure_cpus.fitting_threads(2)
    assert threads == 2 and [n.kind for n in notes] == ["threads_exceed_free"]
    assert measure_cpus.fitting_threads(1) == (1, [])
    monkeypatch.setattr(measure_cpus, "busy_cpus", lambda cpus, window_s=0.3: ())
    assert measure_cpus.fitting_threads(None) == (None, [])


def test_a_median_timed_while_others_held_the_cpus_is_not_called_met() -> None:
    def timing(share: float):  # type: ignore[no-untyped-def]
        clock = FakeClock()
        steady = scheduled(clock, "steady", lambda i: 1e-3)
        timer = measure_timing.WallTimer(clock=clock.now, watch=lambda: lambda: share)
        return measure_timing.interleaved_samples([("steady", steady)], ADAPTIVE, timer)

    quiet = timing(0.02)
    assert quiet.stats["steady"].target_met is True
    assert quiet.stats["steady"].contention == pytest.approx(0.02) and not quiet.notes
    busy = timing(0.5)
    lat = busy.stats["steady"]
    assert lat.target_met is False and lat.relative_ci < 1e-12  # the interval itself was fine
    assert [(n.kind, n.values["share"]) for n in busy.notes] == [("contended", 0.5)]

"""The allocator what-if: planned from the profile's page faults, set in its own worker, judged
and shown as a launch setting (advisor.measure.allocator)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from advisor.core import policy
from advisor.core.artifacts import Capture, ProfileTrace
from advisor.core.model import Replication, Settings
from advisor.judge.actions import scope_rank
from advisor.measure import allocator
from advisor.measure import profile as profile_module
from advisor.measure.pipeline import RunOptions
from advisor.measure.profile import profile_calls
from advisor.measure.replicated_run import planned_arms
from advisor.measure.stages import allocator_planned, what_if_plan
from advisor.render import prose
from advisor.render.actions import action_title
from advisor.render.view import displayer
from tests.support.reports import full_report
from tests.test_advise import mode, run_advise, what_if

glibc = pytest.mark.skipif(not allocator.applies(), reason="the C library is not glibc")


def test_the_arm_is_planned_where_the_faults_could_be_worth_a_share_of_the_call() -> None:
    # at 2 us a fault: 132 faults in a 7.5 ms call could be 3.5% of it, 27 in 6.7 ms 0.8%
    assert policy.allocator_worth_trying(132, 7.5e-3)
    assert not policy.allocator_worth_trying(27, 6.7e-3)
    assert not policy.allocator_worth_trying(None, 7.5e-3)
    assert not policy.allocator_worth_trying(500, None)


def test_the_plan_reads_the_profiles_faults_against_its_median_call() -> None:
    trace = ProfileTrace("cpu", (), unprofiled_us=(7000.0, 7500.0, 9000.0))
    assert not allocator_planned(trace)  # faults not read: nothing planned
    assert allocator_planned(dataclasses.replace(trace, minor_faults_per_call=200.0))
    assert not allocator_planned(dataclasses.replace(trace, minor_faults_per_call=20.0))
    assert not allocator_planned(None)


def test_the_plan_holds_the_allocator_only_when_asked() -> None:
    assert [p.kind for p in what_if_plan((), allocator=True)] == ["allocator"]
    assert what_if_plan(()) == []


def test_the_profile_counts_the_faults_of_its_unprofiled_calls() -> None:
    # 40 MiB, above glibc's largest mmap threshold: mapped afresh and written on every call,
    # a fault per 4 KiB page (fewer where the kernel maps larger pages)
    pages = 40 * 256

    def call() -> None:
        buffer = bytearray(pages * 4096)
        buffer[::4096] = b"1" * pages

    trace = profile_calls(call, 2, "cpu", unprofiled=6)
    assert trace.minor_faults_per_call is not None
    assert trace.minor_faults_per_call >= pages / 4


def test_the_steady_rate_is_the_lowest_stretchs_not_one_after_a_profiler_session() -> None:
    sessions = profile_module._Sessions()
    for before, after in ((0, 0), (0, 252), (0, 0)):  # 21 a call refaulted after a session
        sessions.count_faults(before, after, 12)
    assert sessions.steady_faults_per_call() == 0.0
    sessions.count_faults(None, 5, 12)  # a reading missing: no rate at all, not a partial one
    assert sessions.steady_faults_per_call() is None
    assert profile_module._Sessions().steady_faults_per_call() is None


class FakeLibc:
    def __init__(self, accepts: bool = True) -> None:
        self.calls: list[tuple[int, int]] = []
        self.accepts = accepts

    def mallopt(self, key: int, value: int) -> int:
        self.calls.append((key, value))
        return 1 if self.accepts else 0


def test_keeping_freed_memory_sets_both_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    libc = FakeLibc()
    monkeypatch.setattr(allocator, "_glibc", lambda: libc)
    allocator.keep_freed_memory()
    assert libc.calls == [
        (allocator.M_MMAP_THRESHOLD, 32 * 1024 * 1024),
        (allocator.M_TRIM_THRESHOLD, 1024 * 1024 * 1024),
    ]
    refused = FakeLibc(accepts=False)
    monkeypatch.setattr(allocator, "_glibc", lambda: refused)
    with pytest.raises(RuntimeError, match="refused"):
        allocator.keep_freed_memory()


def test_without_glibc_the_allocator_does_not_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(allocator, "_glibc", lambda: None)
    assert allocator.allocator_variant([]) is None
    with pytest.raises(RuntimeError, match="not glibc"):
        allocator.keep_freed_memory()
    assert "not glibc" in prose.NOT_APPLICABLE["allocator"]


FAULTS_PER_CALL = textwrap.dedent(
    """
    import resource, sys
    from advisor.measure import allocator
    if sys.argv[1] == "kept":
        allocator.keep_freed_memory()

    def call():  # 8 buffers of 512 KiB allocated, written and freed, as a step's activations
        buffers = [bytearray(512 * 1024) for _ in range(8)]
        for buffer in buffers:
            buffer[::4096] = b"1" * (len(buffer) // 4096)
        del buffers

    for _ in range(3):
        call()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        call()
    print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10)
    """
)


def _faults_per_call(how: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", FAULTS_PER_CALL, how], capture_output=True, text=True, check=True
    )
    return float(done.stdout.strip())


@glibc
def test_memory_kept_is_not_faulted_in_again_on_every_call() -> None:
    # by default glibc's heap grows by the call's 4 MiB and, freed, its top (above the trim
    # threshold, twice the 512 KiB mmap threshold the first free set) goes back to the system:
    # about 1,024 faults a call; with the thresholds set the heap keeps it
    assert _faults_per_call("default") > 500
    assert _faults_per_call("kept") < 50


def _allocator_advice(saving_ms: float, ci: tuple[float, float]) -> Any:
    kept = what_if(
        knob="allocator", setting=allocator.LAUNCH_SETTING, fix="placement", kind="allocator",
        targets=(), removed=(), variant_ms=0.1 - saving_ms, saving_ms=saving_ms,
        saving_ci_ms=ci, replication=Replication(processes=4, rounds=5, first_call_s=(9.0,) * 4),
    )  # fmt: skip
    default = dataclasses.replace(mode("default", 0.1), first_call_s=2.0)
    return run_advise(what_ifs=[kept], default=default)


def test_a_measured_allocator_saving_is_a_launch_setting_with_no_break_even() -> None:
    advice = _allocator_advice(0.03, (0.02, 0.04))
    first = advice.actions[0]
    assert first.kind == "allocator" and first.break_even_calls is None  # nothing compiled
    assert first.knob == allocator.LAUNCH_SETTING and first.breaks == ()
    report = dataclasses.replace(full_report(), actions=advice.actions, ledger=advice.ledger)
    title = action_title(first, report, displayer(report))
    assert title.startswith("Launch with the C allocator keeping freed memory")
    assert "MALLOC_MMAP_THRESHOLD_=33554432" in title and "(measured" in title


def test_an_allocator_saving_inside_the_noise_is_no_measurable_effect() -> None:
    advice = _allocator_advice(0.005, (-0.01, 0.02))
    assert advice.actions[0].kind != "allocator"
    shown = [a for a in advice.actions if a.kind == "allocator"]
    assert shown and shown[0].measurable is False


def test_the_allocator_ties_as_a_process_wide_setting_like_a_knob() -> None:
    assert scope_rank("allocator") == scope_rank("knob") > scope_rank("fused")


def test_the_replicated_run_plans_the_arm_from_the_profiles_faults() -> None:
    options = RunOptions("scenarios.print_logging:workload", "cpu", Settings())
    default = mode("default", 7.0)
    with_arm = planned_arms(options, Capture(), default, allocator=True)
    assert "what-if allocator" in [a.label for a in with_arm]
    assert "what-if allocator" not in [a.label for a in planned_arms(options, Capture(), default)]
    failed = dataclasses.replace(default, status="failed")
    assert "what-if allocator" not in [a.label for a in planned_arms(options, Capture(), failed)]

"""Several saved runs of one target judged as one (`advisor.judge.pool`, `advisor judge A B`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from advisor import cli
from advisor.core import replication
from advisor.core.artifacts import Measurements, measurements_to_json
from advisor.core.errors import AdvisorError
from advisor.core.model import (
    Environment,
    LatencyStats,
    ModeResult,
    Replication,
    Settings,
    WhatIf,
    WorkloadInfo,
)
from advisor.judge.measured import measured_steps, runs_to_settle
from advisor.judge.pool import pooled
from advisor.render.markdown import render_markdown
from advisor.render.prose import headline
from advisor.render.report_io import load_report
from tests.support.reports import full_report
from tests.test_advise import mode, run_advise, what_if
from tests.test_allocator import _allocator_advice

DEFAULT_MS = (10.0, 11.0, 9.0, 10.5)  # one process a wave


def arm(medians: tuple[float, ...]) -> Replication:
    return Replication(
        processes=len(medians),
        rounds=10,
        process_medians_ms=medians,
        waves=tuple(range(len(medians))),
        interval_ms=replication.t_interval(medians),
        first_call_s=(2.0,) * len(medians),
    )


def latency(medians: tuple[float, ...]) -> LatencyStats:
    samples = tuple(m for m in medians for _ in range(3))
    rep = arm(medians)
    return LatencyStats(replication.median(medians), 0.1, len(samples), samples, replication=rep)


def allocator(medians: tuple[float, ...], status: str = "measured") -> WhatIf:
    saving = replication.paired_from_medians(dict(enumerate(DEFAULT_MS)), dict(enumerate(medians)))
    return WhatIf(
        knob="allocator",
        setting="allocator",
        fix="placement",
        status=status,
        baseline_ms=replication.median(DEFAULT_MS),
        variant_ms=replication.median(medians),
        saving_ms=saving.saving_ms,
        saving_ci_ms=saving.ci_ms,
        replication=arm(medians),
        process_savings_ms=saving.per_wave_ms,
        kind="allocator",
        error=None if status == "measured" else "RuntimeError: boom",
    )


def run(variant: tuple[float, ...], target: str = "m.py:build", **settings: object) -> Measurements:
    return Measurements(
        workload=WorkloadInfo("t", target, "cpu"),
        environment=Environment("2.13", "3.11", "cpu", cpu_threads=1, cpu_count=2),
        settings=Settings(protocol="replicated", threads=1, **settings),  # type: ignore[arg-type]
        modes=(ModeResult("default", "ok", latency=latency(DEFAULT_MS)),),
        what_ifs=(allocator(variant),),
    )


def test_one_run_is_itself() -> None:
    one = run((9.5, 10.4, 8.6, 9.9))
    assert pooled([one]) is one


def test_the_runs_waves_follow_one_another_and_savings_pair_within_a_wave() -> None:
    first, second = (9.5, 10.4, 8.6, 9.9), (9.9, 10.9, 8.9, 10.0)
    both = pooled([run(first), run(second)])
    (w,) = both.what_ifs
    assert w.replication is not None and w.replication.waves == tuple(range(8))
    assert (w.replication.processes, w.replication.runs, both.settings.runs) == (8, 2, 2)
    by_wave = dict(enumerate(DEFAULT_MS + DEFAULT_MS))
    expected = replication.paired_from_medians(by_wave, dict(enumerate(first + second)))
    assert w.saving_ms == pytest.approx(expected.saving_ms)
    assert w.saving_ci_ms == pytest.approx(expected.ci_ms)
    default = both.mode("default")
    assert default is not None and default.latency is not None
    assert default.latency.replication is not None and default.latency.replication.runs == 2
    assert default.latency.n == 24


def test_two_runs_carry_the_run_level_spread_once_each() -> None:
    """The same waves read as pooled from two runs get a narrower rerun interval than from
    one: the run-level part of its variance is halved; the waves' own part is unchanged."""
    one = run((9.5, 10.4, 8.6, 9.9))
    (w,) = one.what_ifs
    assert w.replication is not None
    two = replace(one, what_ifs=(replace(w, replication=replace(w.replication, runs=2)),))

    def interval(m: Measurements) -> tuple[float, float]:
        modes = {x.mode: x for x in m.modes}
        (step,) = measured_steps(modes, m.what_ifs, frozenset(), 0.03, run_spread=0.025)
        assert step.run_ci_ms == pytest.approx(w.saving_ci_ms)
        return step.saving_ci_ms

    (low1, high1), (low2, high2) = interval(one), interval(two)
    assert low1 < low2 < w.saving_ci_ms[0] and w.saving_ci_ms[1] < high2 < high1  # type: ignore[index]


def test_a_what_if_that_failed_in_any_run_fails_in_the_pool() -> None:
    good = run((9.5, 10.4, 8.6, 9.9))
    bad = replace(good, what_ifs=(allocator((9.5,) * 4, status="failed"),))
    (w,) = pooled([good, bad]).what_ifs
    assert (w.status, w.error) == ("failed", "RuntimeError: boom")


def test_runs_of_other_targets_or_protocols_are_refused_naming_the_run() -> None:
    good = run((9.5, 10.4, 8.6, 9.9))
    with pytest.raises(AdvisorError, match=r"cannot pool B: it measured other\.py:build"):
        pooled([good, run((9.5,) * 4, target="other.py:build")], ["A", "B"])
    quick = replace(good, settings=replace(good.settings, protocol="quick"))
    with pytest.raises(AdvisorError, match="cannot pool B: only replicated"):
        pooled([good, quick], ["A", "B"])


def _saved(folder: Path, m: Measurements) -> Path:
    folder.mkdir()
    (folder / "measurements.json").write_text(measurements_to_json(m))
    return folder


def test_judge_takes_several_runs_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _saved(tmp_path / "a", run((9.5, 10.4, 8.6, 9.9)))
    b = _saved(tmp_path / "b", run((9.9, 10.9, 8.9, 10.0)))
    out = tmp_path / "pooled"
    assert cli.main(["judge", str(a), str(b), "--out", str(out), "--quiet"]) == 0
    report = load_report(out)
    assert report.settings.runs == 2
    assert "2 saved runs judged together" in (out / "report.md").read_text()
    other = _saved(tmp_path / "c", run((9.5,) * 4, target="other.py:build"))
    capsys.readouterr()
    assert cli.main(["judge", str(a), str(other), "--out", str(tmp_path / "x")]) == 2
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert err.startswith("advisor: error: cannot pool") and str(other) in err
    assert not (tmp_path / "x").exists()


def test_an_unsettled_saving_that_would_lead_says_how_many_runs_would_tell() -> None:
    # 3.5% of a 0.1 ms step whose interval reaches 4.5% below zero: the half-width from the
    # point to the low end is 2.3 times the saving, so about 2.3 ** 2 = 5.2 -> 6 runs
    advice = _allocator_advice(0.0035, (-0.0045, 0.0115))
    (kept,) = [a for a in advice.actions if a.kind == "allocator"]
    assert (kept.measurable, kept.runs_to_settle) == (False, 6)
    report = replace(full_report(), actions=advice.actions, ledger=advice.ledger)
    assert "may save 3.5%: about 6 runs judged together would tell" in render_markdown(report)
    # named, not numbered: it is among what was tried, not among the actions to do
    assert headline(report).endswith(  # type: ignore[union-attr]
        "; the C allocator keeping freed memory (glibc's `mallopt`), compiled as now may save "
        "3.5% of the step, which one run cannot tell from zero (about 6 runs judged together "
        "would)"
    )
    # a measured action already saving more: more runs of this one would not change the lead
    more = run_advise(what_ifs=[*_allocator_what_ifs(0.0035, (-0.0045, 0.0115)), what_if()])
    (kept,) = [a for a in more.actions if a.kind == "allocator"]
    assert kept.runs_to_settle is None
    # a saving whose interval is above zero needs no more runs; one under the minimum effect
    # would not count whatever more runs said
    step = measured_steps(
        {"default": mode("default", 0.1)},
        tuple(_allocator_what_ifs(0.002, (-0.001, 0.005))),
        frozenset(),
        min_effect=0.03,
    )
    assert [runs_to_settle(s) for s in step] == [None]


def _allocator_what_ifs(saving_ms: float, ci: tuple[float, float]) -> list[WhatIf]:
    return [replace(allocator(DEFAULT_MS), baseline_ms=0.1, variant_ms=0.1 - saving_ms,
                    saving_ms=saving_ms, saving_ci_ms=ci, matches_eager=True)]  # fmt: skip

"""Data-parallel training (`advisor run TARGET --ranks N`): two real gloo ranks on the CPU
measuring scenarios/train_ddp.py into one merged report; and, without processes, the merge, the
judging of DDP's graph splits and its own breaks, the lockstep counts, and the process runner.

The real runs start 2 rank processes each (1 thread each, 3 rounds, 3 profiled calls); the
worker imports `advisor` from the import path of this process, so run pytest from the
repository root (or with PYTHONPATH set to it).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.core.artifacts import Capture, FrameRecord, Measurements, measurements_from_json
from advisor.core.errors import AdvisorError
from advisor.core.model import (
    BreakSite,
    Environment,
    GraphRecord,
    LatencyStats,
    Location,
    ModeResult,
    Report,
    Settings,
    WorkloadInfo,
)
from advisor.core.paths import is_installed
from advisor.core.processes import Launch, run_processes
from advisor.core.serial import message_from_json, message_to_json
from advisor.core.taxonomy import DDP_KNOB, category_for, is_ddp_break
from advisor.judge import judge
from advisor.render import report_io
from advisor.render.notes import note_text

FAST = ["--repeats", "3", "--warmup", "1", "--profile-calls", "3", "--threads", "1"]
BUCKET_GRAPHS = 6  # scenarios/train_ddp.py: six Linear(512, 512), one per 1 MiB bucket


def _run(out: Path, *extra: str) -> tuple[Report, str, str]:
    code = main(["run", "train_ddp", "--ranks", "2", *FAST, "--timeout", "300", "--quiet",
                 "--out", str(out), *extra])  # fmt: skip
    assert code == 0
    report = report_io.load_report(out / "report.json")
    return report, (out / "report.md").read_text(), (out / "report.html").read_text()


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, str, str, Path]:
    out = tmp_path_factory.mktemp("ddp") / "plain"
    return (*_run(out, "--no-what-if"), out)


def test_two_ranks_merge_into_one_report(plain_run: tuple[Report, str, str, Path]) -> None:
    report, markdown, html, out = plain_run
    assert [r.rank for r in report.ranks] == [0, 1]
    medians = {}
    for timings in report.ranks:
        for mode in ("eager", "default"):
            result = timings.mode(mode)
            assert result is not None and result.latency is not None
            assert result.latency.n == 3  # lockstep: exactly --repeats rounds, on every rank
        default = timings.mode("default")
        assert default is not None and default.latency is not None
        medians[timings.rank] = default.latency.median_ms
    assert report.step_rank == max(medians, key=lambda r: medians[r])
    step = report.mode("default")
    assert step is not None and step.latency is not None
    assert step.latency.median_ms == medians[report.step_rank]
    assert report.settings.ranks == 2 and report.settings.target_ci == Settings().target_ci
    # the per-rank table, and which rank set the step
    assert "## Ranks" in markdown and "set the step" in markdown
    assert "| 0 " in markdown and "| 1 " in markdown
    assert f"Rank {report.step_rank} set the step" in markdown
    assert "<h2>Ranks</h2>" in html
    # `advisor judge` judges the merged run again, ranks and all
    again = judge(measurements_from_json((out / "measurements.json").read_text()))
    assert again.ranks == report.ranks and again.step_rank == report.step_rank


def test_bucket_splits_are_intended_and_counted(plain_run: tuple[Report, str, str, Path]) -> None:
    report, markdown, _, _ = plain_run
    assert len(report.splits) == 1
    split = report.splits[0]
    assert split.function == "forward" and split.graphs == BUCKET_GRAPHS
    assert split.graph_calls == BUCKET_GRAPHS  # graph calls per region instance (profile)
    assert split.backward_calls == BUCKET_GRAPHS
    assert split.extra_calls == 2 * (BUCKET_GRAPHS - 1) and split.cost_ms > 0
    assert f"into {BUCKET_GRAPHS} graphs at gradient-bucket boundaries (intended" in markdown
    assert "Not a graph break: nothing to rewrite" in markdown


def test_ddp_breaks_are_its_own_and_nothing_in_torch_is_to_rewrite(
    plain_run: tuple[Report, str, str, Path],
) -> None:
    report, markdown, _, _ = plain_run
    assert report.breaks, "DDP's own forward breaks (its context manager)"
    for entry in report.breaks:
        assert is_ddp_break(entry.site)
        assert entry.decision is not None and entry.decision.reason == "ddp"
        assert entry.verdict == "ignore" and entry.cost_ms == 0.0
    for action in report.actions:
        assert action.kind not in ("code", "isolate", "upstream")
        assert action.where is None or not is_installed(action.where.file)
    assert "ignore (DDP's own)" in markdown


def test_optimize_ddp_what_if_is_measured_against_the_default(tmp_path: Path) -> None:
    report, markdown, _ = _run(tmp_path / "what_if")
    measured = report.what_if(DDP_KNOB.name)
    assert measured is not None and measured.kind == "setting"
    assert measured.status == "measured", measured.error
    assert measured.baseline_ms and measured.variant_ms and measured.rounds == 3
    assert "`optimize_ddp=False`" in markdown and "one graph, no overlap" in markdown
    # nothing is planned for DDP's own breaks: no placement, no knob, no no-op
    assert {w.kind for w in report.what_ifs} <= {"guards", "setting"}


def test_the_scenario_says_how_to_run_it_without_a_process_group() -> None:
    from advisor.measure.workload import load_target

    with pytest.raises(AdvisorError, match="run it with --ranks 2"):
        load_target("train_ddp", "cpu")


# --- without processes ------------------------------------------------------------------------


def _lat(median: float) -> LatencyStats:
    return LatencyStats(median, 0.1, 3, (median,) * 3)


def _site(site_id: str, file: str, line: int, explanation: str = "") -> BreakSite:
    return BreakSite(
        site_id, "GB0007", "skipped", Location(file, line, "f", "x"), explanation=explanation
    )


def _rank(default_ms: float, sites: tuple[BreakSite, ...]) -> Measurements:
    modes = (
        ModeResult("eager", "ok", 0.1, _lat(10.0)),
        ModeResult("default", "ok", 1.0, _lat(default_ms)),
    )
    return Measurements(
        WorkloadInfo("w", "t", "cpu"),
        Environment("2.13", "3.11", "cpu"),
        Settings(target_ci=0.0, budget_s=1e9, min_block_s=0.0, ranks=2),
        modes,
        Capture(sites=sites),
    )


def test_merge_takes_the_slowest_rank_and_notes_breaks_that_differ() -> None:
    from advisor.measure.ranks import merge_ranks

    shared = _site("B1", "/u/model.py", 10)
    extra = _site("B2", "/u/model.py", 20)
    settings = Settings(ranks=2)
    merged = merge_ranks([_rank(5.0, (shared,)), _rank(7.0, (shared, extra))], settings)
    assert merged.step_rank == 1 and merged.settings == settings
    assert [(r.rank, r.breaks) for r in merged.ranks] == [(0, 1), (1, 2)]
    assert merged.capture.sites == (shared, extra)  # the step rank's capture
    note = next(n for n in merged.notes if n.kind == "rank_breaks_differ")
    assert note.subject == "rank 0" and note.values == {"missing": 1, "extra": 0, "step": 1}
    report = judge(merged)
    assert report.step_rank == 1 and len(report.ranks) == 2
    assert "rank 0's breaks differ from rank 1's" in " ".join(note_text(n) for n in report.warnings)


def test_rank_tasks_and_results_survive_the_trip_through_json() -> None:
    """What the parent writes for the ranks and each rank writes back (compact: a rank's
    measurements are large)."""
    from advisor.measure.ranks import RankResult, RankTask

    task = RankTask("t.py:f", '{"n": 2}', "cpu", Settings(ranks=2), ("eager", "default"))
    assert message_from_json(RankTask, message_to_json(task)) == task
    result = RankResult(1, _rank(5.0, (_site("B1", "/u/model.py", 10),)))
    text = message_to_json(result, compact=True)
    assert ", " not in text and ": " not in text  # no whitespace between items
    assert message_from_json(RankResult, text) == result


def test_splits_come_from_the_capture_without_a_profile() -> None:
    graph = GraphRecord("3/0", "forward", "/u/model.py", (5,), 12, ddp_graphs=6)
    frame = FrameRecord("3/0", "forward", "/u/model.py", 5, 12, ddp_graphs=6)
    m = dataclasses.replace(_rank(5.0, ()), capture=Capture(graphs=(graph,), frames=(frame,)))
    (split,) = judge(m).splits
    assert (split.function, split.graphs, split.graph_calls, split.cost_ms) == ("forward", 6, 0, 0)


def test_ddp_breaks_are_recognised_by_file_or_by_the_ddp_method_named() -> None:
    torch_file = "/x/site-packages/torch/nn/parallel/distributed.py"
    assert is_ddp_break(_site("B1", torch_file, 1757))
    named = "the function `DistributedDataParallel._inside_ddp_forward` in file `x`"
    assert is_ddp_break(_site("B1", "/usr/lib/python3.11/contextlib.py", 105, named))
    assert not is_ddp_break(_site("B1", "/u/model.py", 3, "the function `foo`"))
    assert category_for(_site("B1", torch_file, 1757)).key == "ddp"


def test_what_if_plan_skips_ddp_breaks_and_adds_the_ddp_setting() -> None:
    from advisor.measure.stages import what_if_plan

    ddp_site = _site("B1", "/x/torch/nn/parallel/distributed.py", 1757)
    assert what_if_plan((ddp_site,)) == []
    plans = what_if_plan((ddp_site,), ddp=True)
    assert [(p.label, p.targets) for p in plans] == [(DDP_KNOB.name, ())]


def _counting(cost_s: float) -> tuple[Callable[[], Any], list[int]]:
    calls = [0]

    def fn() -> int:
        calls[0] += 1
        time.sleep(cost_s)
        return 1

    return fn, calls


@pytest.mark.parametrize("cost_s", [0.0, 0.004])
def test_lockstep_counts_do_not_depend_on_how_long_a_call_takes(cost_s: float) -> None:
    """A rank that is slower makes the same calls: timing and profiling counts are fixed."""
    from advisor.measure import harness
    from advisor.measure.lockstep import lockstep_settings, unprofiled_calls
    from advisor.measure.profile import profile_calls
    from advisor.measure.workload import Workload

    settings = lockstep_settings(Settings(repeats=3, warmup=1, ranks=2, profile_calls=2))
    fn, calls = _counting(cost_s)
    options = harness.HarnessOptions(
        modes=("eager", "default"), compile_fn=lambda f, _b, _g: f, memory=False
    )
    run = harness.measure(Workload(fn), settings, "cpu", options=options)
    # eager: 2 first calls; default: 1 + 1 warm-up; timing: per mode 1 warm-up, 1 sizing call,
    # then 3 rounds of one call
    assert calls[0] == 2 + 2 + 2 * (1 + 1 + 3)
    calls[0] = 0
    unprofiled = unprofiled_calls(settings, settings.profile_calls)
    profile_calls(run.calls["default"], 2, "cpu", warmup=1, sessions=2, unprofiled=unprofiled)
    # 1 warm-up, then per session: its share of the unprofiled calls, one unrecorded call and
    # its recorded calls
    assert unprofiled == 12 and calls[0] == 1 + 2 * (6 + 1 + 1)


def test_run_processes_stops_the_others_when_one_fails() -> None:
    started = time.monotonic()
    outcomes = run_processes(
        [
            Launch([sys.executable, "-c", "import time; time.sleep(60)"]),
            Launch([sys.executable, "-c", "import sys; sys.exit(5)"]),
        ],
        timeout_s=120,
    )
    assert time.monotonic() - started < 30
    assert outcomes[1].returncode == 5 and not outcomes[1].stopped
    assert outcomes[0].stopped and outcomes[0].signal == "SIGKILL"


def test_run_processes_times_out_every_process() -> None:
    outcomes = run_processes(
        [Launch([sys.executable, "-c", "import time; time.sleep(60)"])] * 2, timeout_s=1.0
    )
    assert all(o.timed_out and o.signal == "SIGKILL" for o in outcomes)


def test_the_ranks_option_reaches_the_settings_and_a_manifest_may_set_it() -> None:
    from advisor.core.options import RUN_OPTIONS, by_dest

    option = by_dest(RUN_OPTIONS)["ranks"]
    assert option.problem(2) is None and option.problem(0) is not None
    assert option.to_args(2) == ["--ranks", "2"]
    manifest = Path(__file__).resolve().parent.parent / "benchmarks/trainzoo/trainzoo.toml"
    assert 'target = "train_ddp"\noptions = { ranks = 2 }' in manifest.read_text()
    assert json.loads(json.dumps(dataclasses.asdict(Settings(ranks=2))))["ranks"] == 2


def test_redact_reaches_every_rank_s_modes() -> None:
    from advisor.core.model import ModeError
    from advisor.core.redact import redact, redact_measurements
    from advisor.measure.ranks import merge_ranks

    error = ModeError("Unsupported", "at /home/me/secret/model.py:3", file="/home/me/x.py")
    failed = ModeResult("fullgraph", "failed", error=error)
    ranks = [dataclasses.replace(m, modes=(*m.modes, failed)) for m in (_rank(5, ()), _rank(6, ()))]
    merged = redact_measurements(merge_ranks(ranks, Settings(ranks=2)))
    report = redact(judge(merge_ranks(ranks, Settings(ranks=2))))
    for timings in (*merged.ranks, *report.ranks):
        mode = timings.mode("fullgraph")
        assert mode is not None and mode.error is not None
        assert "/home/me" not in mode.error.message and "/home/me" not in (mode.error.file or "")

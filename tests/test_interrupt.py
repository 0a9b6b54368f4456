"""Ctrl-C keeps what was measured: the partial report is written, marked incomplete in
report.json and in every rendering, and the exit code is 130."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from advisor import runner
from advisor.cli import main
from advisor.core.artifacts import Measurements
from advisor.core.model import Settings
from advisor.measure import harness, pipeline, torch_adapter
from advisor.measure import timing as measure_timing
from tests.support.reports import full_report, measurements_of

ROOT = Path(__file__).resolve().parent.parent


class InterruptingTimer(measure_timing.WallTimer):
    """Wall-clock timing that raises KeyboardInterrupt (as Ctrl-C does) at timed block N."""

    def __init__(self, at_block: int) -> None:
        super().__init__()
        self.at_block, self.blocks = at_block, 0

    def time_block(self, call: Callable[[], Any], number: int) -> float:
        self.blocks += 1
        if self.blocks == self.at_block:
            raise KeyboardInterrupt
        return super().time_block(call, number)


def test_ctrl_c_while_timing_gives_the_rounds_done_so_far(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(
        torch_adapter,
        "compile_mode",
        lambda fn, _backend, fullgraph: torch.compile(fn, backend="eager", fullgraph=fullgraph),
    )
    # tiny breaks the graph, so fullgraph=True fails and eager and default are timed: one
    # calibration block each, then two blocks a round. Block 13 is the first of round 6: five
    # rounds are done.
    monkeypatch.setattr(harness, "timer_for", lambda _device: InterruptingTimer(at_block=13))
    # the partial measurements are kept too, and judge to the same report
    options = pipeline.RunOptions(
        "tests/targets/tiny.py:factory", "cpu", Settings(repeats=50, min_block_s=1e-4)
    )
    with pytest.raises(runner.RunInterrupted) as stop:
        runner.run(options)
    report = stop.value.result.report
    assert report.incomplete and stop.value.result.measurements.incomplete
    latency = {m.mode: m.latency.n if m.latency else None for m in report.modes}
    assert latency == {"eager": 5, "default": 5, "fullgraph": None}
    assert report.mode("fullgraph").status == "failed"
    assert [s.gb_code for s in report.sites] == ["GB0059"]  # the capture is kept
    assert report.breaks == ()  # nothing was profiled, so nothing is costed


def test_the_cli_writes_the_partial_report_and_exits_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    partial = replace(measurements_of(full_report()), incomplete=True)

    def interrupted(*_args: object) -> Measurements:
        return partial  # what a run stopped by Ctrl-C hands back: the measurements so far

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(runner, "measure", interrupted)
    out = tmp_path / "run"
    assert main(["run", "tests/targets/good.py:factory", "--out", str(out)]) == 130
    assert f"partial report written to {out}/" in capsys.readouterr().err
    assert json.loads((out / "report.json").read_text())["incomplete"] is True
    assert (out / "measurements.json").is_file()
    assert "**INCOMPLETE: the run was interrupted" in (out / "report.md").read_text()
    assert '<p class="incomplete">INCOMPLETE' in (out / "report.html").read_text()
    assert main(["show", str(out)]) == 0
    assert "INCOMPLETE" in capsys.readouterr().out

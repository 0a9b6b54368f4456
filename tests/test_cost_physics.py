"""Cost parts against physics: breaks whose eager gaps busy-wait a known time (real Inductor
compiles and a real profile). The wait is the user's Python at the line: moving or isolating
it keeps it, so it must come out as Python work, and the isolate saving must be about one
break's own overhead, as priced by the probe measured in the same run.

The attribution rescales every segment from the time of the profile to the mode's median
(machine drift between the two); a busy wait is wall time and does not drift, so its part is
checked at the time of the profile, before that rescale (the report states the rescale)."""

from __future__ import annotations

import pytest

from advisor import runner
from advisor.core.model import Settings
from advisor.measure import pipeline, torch_adapter
from advisor.measure.workload import load_target
from tests.targets.busy import WAIT_US

SETTINGS = Settings(warmup=2, repeats=7, budget_s=6.0, profile_calls=12, what_if=False)


def analyse(factory: str):  # type: ignore[no-untyped-def]
    target = f"tests/targets/busy.py:{factory}"
    options = pipeline.RunOptions(target, "cpu", SETTINGS, modes=("eager", "default"))
    try:
        return runner.run_workload(load_target(target, "cpu"), options, "cpu", print).report
    finally:
        torch_adapter.reset_dynamo()


@pytest.mark.inductor
@pytest.mark.parametrize(
    ("factory", "waits"),
    [("disabled", ("disabled_long", "disabled_short")), ("printing", ("slow_print",))],
)
def test_busy_waits_are_python_work_and_isolating_them_saves_only_the_overhead(
    factory: str, waits: tuple[str, ...]
) -> None:
    report = analyse(factory)
    by_line = sorted(report.breaks, key=lambda e: e.site.where.line)
    assert len(by_line) == len(waits)
    calibration = report.attribution.calibration
    assert calibration.graph_call_us is not None and calibration.glue_us is not None
    for entry, wait in zip(by_line, waits, strict=True):
        expected_ms = WAIT_US[wait] / 1e3
        parts = entry.parts
        at_profile_ms = parts.python_work_ms / calibration.rescale
        assert at_profile_ms == pytest.approx(expected_ms, rel=0.10), (wait, parts, calibration)
        # the break's own overhead: one region with its guard lookup, graph call and glue
        one_break = entry.terms.guard_lookup_us + entry.terms.region_overhead_us
        one_break += entry.terms.graph_call_us + entry.terms.glue_us
        assert parts.overhead_ms * 1e3 == pytest.approx(one_break, rel=0.5), (wait, entry.terms)
        assert entry.savings.isolate is not None and entry.savings.isolate < 0.05, wait
    ledger = report.ledger
    assert ledger is not None and ledger.breaks_ms <= ledger.step_ms

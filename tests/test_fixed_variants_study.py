"""The training scenarios' broken-vs-fixed study (`benchmarks.fixed_variants`): the advisor's saving
for the scenario's kind of fix as a share of its own default step, against the reference's share
and interval; the table's verdicts. Nothing measured: the report is a record, the reference a
saved `reference_ab` result."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks import fixed_variants
from tests.support.reports import full_report


def _reference(share: float, low: float, high: float) -> dict[str, Any]:
    saving = {"mean_ms": share * 0.6, "ci95_ms": [low * 0.6, high * 0.6], "mean_share": share,
              "ci95_share": [low, high], "paired_rounds": 5}  # fmt: skip
    return {"savings": {"fixed": saving}, "variants": {"broken": {"median_ms": 0.6}}}


def test_a_projected_share_close_to_the_references_is_within() -> None:
    # train_print's fix isolates; the report's print break projects 0.033 ms of a 0.5 ms step.
    row = fixed_variants.scenario_row("train_print", full_report(), _reference(0.07, 0.05, 0.09))
    assert row["fix_kind"] == "isolate"
    assert row["projected_share"] == pytest.approx(0.066)
    assert row["error_share"] == pytest.approx(0.066 / 0.07 - 1)
    assert row["within"] and row["inside"]
    assert row["reference_default_ms"] == 0.6 and row["first_action"] == "isolate"


def test_a_share_far_off_is_off_unless_the_references_interval_holds_it() -> None:
    wide = fixed_variants.scenario_row("train_print", full_report(), _reference(0.2, 0.0, 0.4))
    assert not wide["within"] and wide["inside"]
    off = fixed_variants.scenario_row("train_print", full_report(), _reference(0.2, 0.15, 0.25))
    assert not off["within"] and not off["inside"]
    text = fixed_variants.render([wide, off])
    assert "Agrees (within 25% of the reference's share, or inside its interval): 1 of 2" in text
    assert "inside its interval" in text and "| off " in text
    assert "0.033 (6.6%)" in text and "20.0% [15.0%, 25.0%]" in text


def test_each_set_holds_its_own_scenarios_and_a_stranger_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    inference = fixed_variants.SETS["scenarios"].names()
    training = fixed_variants.SETS["training"].names()
    assert "print_logging" in inference and "train_print" in training
    assert not set(inference) & set(training)
    assert "train_ddp" not in training  # it has no `fixed` variant
    assert fixed_variants.main(["--set", "scenarios", "--only", "train_print"]) == 2
    assert "not a scenarios scenario with a fixed variant: train_print" in capsys.readouterr().err

"""The training-placements study (`benchmarks.training_placements`): each placement's saving read
from a saved report as a share of the step, the step's parts from its ledger, the table. No
torch, nothing measured: the report is built as a record."""

from __future__ import annotations

import dataclasses

import pytest

from advisor.core.model import Action
from benchmarks import training_placements
from tests.support.reports import full_report


def _report():  # type: ignore[no-untyped-def]
    base = full_report()  # step 0.5 ms
    ledger = dataclasses.replace(base.ledger, backward_ms=0.2, optimizer_ms=0.15)
    placed = Action("optimizer", 0.1, (0.04, 0.16), measured=True, break_even_calls=30_000.0)
    whole = Action("step", 0.01, (-0.05, 0.07), measured=True, measurable=False)
    return dataclasses.replace(base, ledger=ledger, actions=(placed, *base.actions, whole))


def test_placements_are_shares_of_the_step_with_the_steps_parts() -> None:
    row = training_placements.target_row("m.module", _report())
    assert row["parts"] == pytest.approx({"forward": 0.3, "backward": 0.4, "optimizer": 0.3})
    optimizer = row["placements"]["optimizer"]
    assert optimizer["share"] == pytest.approx(0.2)
    assert optimizer["ci_share"] == pytest.approx([0.08, 0.32])
    assert row["placements"]["step"]["measurable"] is False
    assert row["first_action"] == "optimizer" and "module" not in row["placements"]


def test_the_table_says_when_a_placement_pays_and_when_it_has_no_effect() -> None:
    text = training_placements.render([training_placements.target_row("m.module", _report())])
    assert "+20.0% [+8.0%, +32.0%], pays after 30,000 calls" in text
    assert "no measurable effect (+2.0% [-10.0%, +14.0%])" in text
    assert "30% / 40% / 30%" in text

"""The placements-against-reference study (`benchmarks.placements_reference`): the reference's
best option, whether the advisor's first action is it, each placement's agreement, the halves.
Nothing measured: the advisor's rows and the references are saved-result dicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import placements_reference as study


def _reference(**savings: tuple[float, float, float]) -> dict[str, Any]:
    return {
        "savings": {
            name: {"mean_share": share, "ci95_share": [low, high]}
            for name, (share, low, high) in savings.items()
        },
        "variants": {"default": {"median_ms": 10.0}},
        "failed": [],
    }


def _advisor(first: str, **placements: float) -> dict[str, Any]:
    return {
        "default_ms": 8.0,
        "eager_ms": 9.0,
        "first_action": first,
        "placements": {
            kind: {"share": share, "ci_share": [share - 0.1, share + 0.1]}
            for kind, share in placements.items()
        },
    }


REFERENCE = _reference(
    eager=(-0.12, -0.2, -0.05),
    optimizer=(0.20, 0.12, 0.28),
    step=(0.17, 0.10, 0.24),
    fused=(0.03, -0.02, 0.08),
)


def test_the_best_is_the_largest_saving_above_zero_and_keep_when_none_is() -> None:
    options = study.reference_options(REFERENCE)
    assert study.reference_best(options) == "optimizer"
    nothing = study.reference_options(_reference(step=(0.05, -0.01, 0.11)))
    assert study.reference_best(nothing) == "keep"


def test_a_first_action_the_reference_cannot_tell_from_the_best_is_right() -> None:
    options = study.reference_options(REFERENCE)
    assert study.first_right("optimizer", options, "optimizer")
    assert study.first_right("step", options, "optimizer")  # 0.17 >= the best's low 0.12
    assert not study.first_right("fused", options, "optimizer")
    assert not study.first_right("keep", options, "optimizer")
    assert study.first_right("upstream", options, "keep")
    # where nothing pays, an option not slower on average ties with keeping the step as it is
    # (keep's saving is exactly 0: the best's lower bound above, taken as 0)
    unclear = study.reference_options(_reference(split=(0.08, -0.066, 0.225)))
    slower = study.reference_options(_reference(split=(-0.03, -0.1, 0.04)))
    assert study.first_right("split", unclear, "keep")
    assert not study.first_right("split", slower, "keep")
    assert not study.first_right("upstream", unclear, "optimizer")


def test_a_new_sweep_is_judged_against_a_saved_tables_reference(tmp_path: Path) -> None:
    row = study.target_row("m.step", "step", "tuning", _advisor("keep"), _reference(
        split=(0.08, -0.066, 0.225), eager=(-0.3, -0.4, -0.2)))  # fmt: skip
    saved = tmp_path / "placements_reference.json"
    saved.write_text(json.dumps({"targets": [row]}), encoding="utf-8")
    new = tmp_path / "placements.json"
    sweep = {**_advisor("split", split=0.1), "name": "m.step"}
    new.write_text(json.dumps({"targets": [sweep]}), encoding="utf-8")
    (again,) = study.rejudged(saved, new)
    assert again["options"]["split"]["reference"] == row["options"]["split"]["reference"]
    assert again["first_action"] == "split" and again["first_right"]  # it ties with keep
    assert again["options"]["split"]["agrees"] == "within 25%"  # 0.1 against 0.08
    assert again["reference_default_ms"] == 10.0 and again["half"] == "tuning"


def test_rows_read_eager_from_the_modes_and_agreement_per_placement() -> None:
    advisor = _advisor("optimizer", optimizer=0.22, step=0.30, regional=-0.6)
    row = study.target_row("llama.module", "module", "tuning", advisor, REFERENCE)
    options = row["options"]
    assert options["optimizer"]["agrees"] == "within 25%"
    assert options["step"]["agrees"] == "off"  # 0.30 against 0.17 [0.10, 0.24]
    assert options["fused"]["advisor"] is None and options["fused"]["agrees"] is None
    assert options["eager"]["advisor"]["share"] == -0.125  # (8 - 9) / 8
    assert options["eager"]["agrees"] == "within 25%"
    assert "regional" not in options and "module" not in options
    assert row["reference_best"] == "optimizer" and row["first_right"]
    text = study.render([row, {**row, "half": "held out", "first_right": False}])
    assert "- tuning: first action the reference's best" in text
    assert "on 1 of 1 targets; placement savings agreeing on 2 of 3" in text
    assert "- held out: first action the reference's best (or one it cannot tell" in text
    assert "from it) on 0 of 1 targets" in text
    assert "+22.0% [+12.0%, +32.0%] / +20.0% [+12.0%, +28.0%] (within 25%)" in text


def test_the_manifests_targets_have_a_form_with_options_and_a_half() -> None:
    targets = study.manifest_targets()
    assert targets and all(form in study.OPTIONS for _, _, form in targets)
    halves = study.halves()
    assert {halves[model] for _, model, _ in targets} == {"tuning", "held out"}


def _campaign(default_ms: float, **per_round: list[float]) -> dict[str, Any]:
    return {
        "savings": {
            name: {
                "baseline": "default",
                "per_round_share": shares,
                "mean_share": sum(shares) / len(shares),
            }
            for name, shares in per_round.items()
        },
        "variants": {"default": {"median_ms": default_ms}},
        "failed": [],
    }


def test_campaigns_pool_their_rounds_and_keep_each_campaigns_mean() -> None:
    old = _campaign(5.0, optimizer=[-0.1, 0.0, 0.05, -0.15])
    new = _campaign(9.0, optimizer=[0.1, 0.12, 0.08, 0.1], split=[0.2, 0.1, 0.3, 0.2])
    assert study.pooled([new]) is new
    both = study.pooled([old, new])
    optimizer = both["savings"]["optimizer"]
    assert optimizer["paired_rounds"] == 8 and abs(optimizer["mean_share"] - 0.025) < 1e-12
    assert optimizer["campaign_shares"] == [-0.05, 0.1]
    low, high = optimizer["ci95_share"]
    assert low < 0 < high  # the campaigns disagree: the pooled interval holds zero
    assert both["savings"]["split"]["paired_rounds"] == 4  # only the new campaign measured it
    assert both["variants"]["default"]["median_ms"] == 7.0 and both["campaigns"] == 2
    row = study.target_row("m.step", "step", "tuning", _advisor("split", split=0.2), both)
    assert row["reference_best"] == "split" and row["first_right"]
    assert row["reference_rounds"] == 8 and row["reference_campaigns"] == 2
    assert "| 8 (2 campaigns) " in study.render([row])


def test_a_saved_table_that_cannot_be_read_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.json"
    assert study.main(["--reference", str(missing), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("placements_reference: cannot read a saved result:")
    assert "none.json" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_a_campaign_of_one_option_measures_it_beside_the_forms_own_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: dict[str, Any] = {}

    def measure(variants: dict[str, str], *args: Any) -> dict[str, Any]:
        asked.update(variants)
        return _campaign(7.0, allocator=[0.1, 0.2])

    monkeypatch.setattr(study.reference_ab, "measure", measure)
    study.measure("k.step", "kornia_cnn", "step", tmp_path, 2, 1.0, only=("allocator",))
    assert asked == {
        "default": "benchmarks.trainzoo.placed:step@eager",
        "allocator": "benchmarks.trainzoo.placed:allocator_step@eager",
    }
    assert (tmp_path / "k.step" / "reference.json").is_file()


def test_options_a_saved_table_lacks_come_from_the_campaigns_added(tmp_path: Path) -> None:
    row = study.target_row("m.step", "step", "tuning", _advisor("keep"), _reference(
        split=(0.08, -0.066, 0.225)))  # fmt: skip
    saved = tmp_path / "placements_reference.json"
    saved.write_text(json.dumps({"targets": [row]}), encoding="utf-8")
    new = tmp_path / "placements.json"
    sweep = {**_advisor("allocator", allocator=0.15), "name": "m.step"}
    new.write_text(json.dumps({"targets": [sweep]}), encoding="utf-8")
    for name, shares in (("one", [0.1, 0.14, 0.12]), ("two", [0.16, 0.1, 0.2])):
        folder = tmp_path / name / "m.step"
        folder.mkdir(parents=True)
        campaign = _campaign(6.0, allocator=shares, split=[0.9, 0.9])
        (folder / "reference.json").write_text(json.dumps(campaign), encoding="utf-8")
    (again,) = study.rejudged(saved, new, (tmp_path / "one", tmp_path / "two"))
    allocator = again["options"]["allocator"]["reference"]
    assert abs(allocator["share"] - 0.82 / 6) < 1e-12  # the six rounds pooled
    # an option the saved table has keeps the table's (pooled over its own campaigns)
    assert again["options"]["split"]["reference"] == row["options"]["split"]["reference"]
    assert again["reference_best"] == "allocator" and again["first_right"]


def test_an_unknown_option_is_refused_before_anything_is_measured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    with pytest.raises(SystemExit) as refused:
        study.main(["--option", "alocator", "--runs", str(runs)])
    assert refused.value.code == 2 and not runs.exists()
    assert "argument --option: invalid choice: 'alocator'" in capsys.readouterr().err

"""benchmarks/pooled_runs.py: each target judged alone, in pairs and all together from saved
runs, scored against the last reference that scored it; a half's rate weighs targets alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.core.artifacts import measurements_to_json
from benchmarks.pooled_runs import half_rates, main, references
from tests.test_pool import run


def _scored(path: Path, best: str, share: float, low: float) -> Path:
    option = {"reference": {"share": share, "ci_share": [low, share * 2 - low]}}
    row = {"name": "t.step", "half": "tuning", "reference_best": best,
           "options": {"split": option}}  # fmt: skip
    path.write_text(json.dumps({"targets": [row]}))
    return path


def test_three_runs_give_three_alone_three_pairs_and_one_of_all(tmp_path: Path) -> None:
    for label in "abc":
        folder = tmp_path / label / "t.step"
        folder.mkdir(parents=True)
        (folder / "measurements.json").write_text(measurements_to_json(run((9.5, 10.4, 8.6, 9.9))))
    old = _scored(tmp_path / "old.json", "split", 0.1, 0.05)
    new = _scored(tmp_path / "new.json", "keep", 0.01, -0.05)  # the last reference counts
    runs = [f"--run={label}={tmp_path / label}" for label in "abc"]
    out = tmp_path / "out"
    assert main([*runs, "--scored", str(old), "--scored", str(new), "--out", str(out)]) == 0
    (row,) = json.loads((out / "pooled_runs.json").read_text())["targets"]
    assert [len(row[w]) for w in ("alone", "pairs", "all")] == [3, 3, 1]
    assert row["pairs"][0]["runs"] == ["a", "b"] and row["reference_best"] == "keep"
    # no profile, so no action: "none" is right only where keeping the step is the best
    assert row["rates"] == {"alone": 1.0, "pairs": 1.0, "all": 1.0}
    assert main([*runs, "--scored", str(old), "--out", str(tmp_path / "o2")]) == 0
    (row,) = json.loads((tmp_path / "o2" / "pooled_runs.json").read_text())["targets"]
    assert row["rates"]["pairs"] == 0.0


def test_a_half_is_the_mean_of_its_targets_rates() -> None:
    def row(half: str, pairs: float | None) -> dict[str, Any]:
        return {"half": half, "rates": {"alone": 1.0, "pairs": pairs, "all": None}}

    halves = half_rates([row("tuning", 0.5), row("tuning", 1.0), row("held out", None)])
    assert halves["pairs"] == {"tuning": 0.75, "held out": None, "all": 0.75}
    assert halves["all"]["tuning"] is None


def test_a_scored_table_whose_best_disagrees_with_its_options_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="its best reads split"):
        references([_scored(tmp_path / "x.json", "keep", 0.1, 0.05)])

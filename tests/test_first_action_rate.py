"""The first-action rate over reruns (benchmarks/first_action_rate.py): each target weighs the
same whatever number of runs scored it, a run may score a subset, and bad input is one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.first_action_rate import half_rate, main, reference_of, target_rates


def _row(name: str, half: str, first: str, right: bool, best: str = "fused") -> dict[str, Any]:
    return {"name": name, "half": half, "first_action": first, "first_right": right,
            "reference_best": best}  # fmt: skip


FULL = [
    _row("a.module", "tuning", "fused", True),
    _row("k.module", "tuning", "keep", False),
    _row("b.step", "held out", "keep", True, "keep"),
]
# a rerun of the target in doubt alone
RERUN = [_row("k.module", "tuning", "fused", True)]


def test_each_target_weighs_the_same_however_many_runs_scored_it() -> None:
    rates = {r.name: r for r in target_rates({"full": FULL, "k1": RERUN, "k2": RERUN})}
    assert rates["k.module"].right == (False, True, True)
    assert rates["k.module"].runs == ("full", "k1", "k2")
    assert rates["k.module"].rate == pytest.approx(2 / 3)
    assert rates["a.module"].rate == 1.0 and rates["a.module"].runs == ("full",)
    listed = list(rates.values())
    # tuning: (1 + 2/3) / 2, not the 3 of 4 scored calls
    assert half_rate(listed, "tuning") == pytest.approx(5 / 6)
    assert half_rate(listed, "held out") == 1.0
    assert half_rate(listed) == pytest.approx((1 + 2 / 3 + 1) / 3)
    assert half_rate([], "tuning") is None


def _scored(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"targets": rows}))
    return path


def test_the_study_writes_its_table_and_json(tmp_path: Path, capsys: Any) -> None:
    full, rerun = _scored(tmp_path / "full.json", FULL), _scored(tmp_path / "k.json", RERUN)
    assert main([f"full={full}", f"k1={rerun}", "--out", str(tmp_path / "out")]) == 0
    data = json.loads((tmp_path / "out" / "first_action_rate.json").read_text())
    assert data["halves"] == {"tuning": 0.75, "held out": 1.0, "all": pytest.approx(5 / 6)}
    markdown = (tmp_path / "out" / "first_action_rate.md").read_text()
    assert "| a.module" in markdown and "fused (right)" in markdown and "keep (wrong)" in markdown
    assert "- tuning: 75% of first actions right, target by target (2 of 3 scored calls" in markdown
    assert capsys.readouterr().out.strip() == markdown.strip()


def test_supersede_reads_each_target_from_its_last_run(tmp_path: Path) -> None:
    """A rerun scored against a reference of its own replaces, for its targets, the run before;
    the other targets keep theirs, and the replaced cell is shown as not counted."""
    rerun = [_row("k.module", "tuning", "upstream", True, "keep")]
    rates = {r.name: r for r in target_rates({"full": FULL, "same_hour": rerun}, supersede=True)}
    assert rates["k.module"].runs == ("same_hour",) and rates["k.module"].rate == 1.0
    assert rates["k.module"].reference_best == "keep"
    assert rates["a.module"].runs == ("full",)
    assert half_rate(list(rates.values()), "tuning") == 1.0
    full, same = _scored(tmp_path / "full.json", FULL), _scored(tmp_path / "s.json", rerun)
    argv = [f"full={full}", f"same_hour={same}", "--supersede", "--out", str(tmp_path / "out")]
    assert main(argv) == 0
    markdown = (tmp_path / "out" / "first_action_rate.md").read_text()
    assert "keep (not counted)" in markdown and "upstream (right)" in markdown
    assert "- tuning: 100% of first actions right" in markdown
    assert json.loads((tmp_path / "out" / "first_action_rate.json").read_text())["supersede"]


@pytest.mark.parametrize(
    ("runs", "message"),
    [
        (["a={full}", "a={full}"], "each run needs a label of its own"),
        (["a={tmp}/missing.json"], "cannot read a scored run"),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, capsys: Any, runs: list[str], message: str) -> None:
    full = _scored(tmp_path / "full.json", FULL)
    argv = [r.format(full=full, tmp=tmp_path) for r in runs]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_supersede_keeps_every_run_scored_against_the_last_reference(tmp_path: Path) -> None:
    """Runs tagged with one reference all count for a target that reference scored last (the
    sweeps of one rule against a newer reference), the older reference's runs do not, and a
    target the newer one did not score keeps its own."""
    k_right = [_row("k.module", "tuning", "fused", True, "fused")]
    k_wrong = [_row("k.module", "tuning", "upstream", False, "fused")]
    runs = {"full@old": FULL, "s1@new": k_right, "s2@new": k_wrong, "s3@new": k_right}
    references = {label: reference_of(label) for label in runs}
    rates = {r.name: r for r in target_rates(runs, supersede=True, references=references)}
    assert rates["k.module"].runs == ("s1@new", "s2@new", "s3@new")
    assert rates["k.module"].rate == pytest.approx(2 / 3)
    assert rates["a.module"].runs == ("full@old",)
    # untagged, each run is its own reference: the last alone counts
    assert target_rates(runs, supersede=True)[1].runs == ("s3@new",)
    paths = {label: _scored(tmp_path / f"{i}.json", rows) for i, (label, rows) in
             enumerate(runs.items())}  # fmt: skip
    argv = [f"{label}={path}" for label, path in paths.items()]
    assert main([*argv, "--supersede", "--out", str(tmp_path / "out")]) == 0
    data = json.loads((tmp_path / "out" / "first_action_rate.json").read_text())
    assert data["halves"]["tuning"] == pytest.approx((1 + 2 / 3) / 2)
    markdown = (tmp_path / "out" / "first_action_rate.md").read_text()
    assert "keep (not counted)" in markdown and "upstream (wrong)" in markdown

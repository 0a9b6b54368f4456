"""The pooled run-level spread (`benchmarks.run_spread`): campaigns weighted by their pair
counts, the policy's value rounded up from it, and the committed study agreeing with the value
the judge widens intervals by. Nothing measured here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from advisor.core import policy
from benchmarks import run_spread

ROOT = Path(__file__).resolve().parents[1]


def test_campaigns_are_pooled_by_their_pair_counts() -> None:
    pool = run_spread.pooled([
        {"pairs": 30, "run_sd": 0.03},
        {"pairs": 10, "run_sd": 0.01},
        {"pairs": 0, "run_sd": None},  # a campaign with no pair counts for nothing
    ])  # fmt: skip
    assert pool["pairs"] == 40
    assert pool["run_sd"] == pytest.approx(math.sqrt((30 * 0.03**2 + 10 * 0.01**2) / 40))
    assert run_spread.pooled([]) == {"pairs": 0, "run_sd": None}


@pytest.mark.parametrize(
    ("value", "expected"), [(0.0201, 0.025), (0.02, 0.02), (0.0235, 0.025), (0.0251, 0.03)]
)
def test_the_policy_value_is_rounded_up_to_a_half_point(value: float, expected: float) -> None:
    assert run_spread.rounded_up(value) == pytest.approx(expected)


def _campaign(path: Path, pairs: int, sd: float) -> Path:
    path.write_text(json.dumps({"machine": "m", "share_spread": {"pairs": pairs, "run_sd": sd}}))
    return path


def test_main_writes_the_pooled_study(tmp_path: Path) -> None:
    a = _campaign(tmp_path / "a.json", 20, 0.02)
    b = _campaign(tmp_path / "b.json", 20, 0.03)
    out = tmp_path / "out"
    code = run_spread.main(["--campaign", f"a={a}", "--campaign", f"b={b}", "--out", str(out)])
    assert code == 0
    data = json.loads((out / "run_spread.json").read_text())
    assert data["pooled"]["pairs"] == 40
    assert data["policy_value"] == pytest.approx(0.03)
    assert "| pooled | 40 |" in (out / "run_spread.md").read_text()


def test_a_file_that_is_not_a_reruns_result_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"targets": {}}')
    out = tmp_path / "out"
    assert run_spread.main(["--campaign", f"x={bad}", "--out", str(out)]) == 2
    assert run_spread.main(["--campaign", "no-equals-sign", "--out", str(out)]) == 2
    assert run_spread.main(["--campaign", f"x={tmp_path / 'absent.json'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("benchmarks.run_spread: ") for line in err)
    assert not out.exists()


def test_the_judge_widens_by_the_committed_pooled_value() -> None:
    committed = json.loads((ROOT / "reports/benchmarks/run_spread/run_spread.json").read_text())
    assert policy.SAVING_RUN_SPREAD == pytest.approx(committed["policy_value"])
    # and the committed study is what its campaigns pool to today
    fresh = run_spread.study(run_spread._campaigns(None))
    assert fresh["pooled"] == pytest.approx(committed["pooled"])
    assert fresh["policy_value"] == pytest.approx(committed["policy_value"])

"""The settling-waves study runs the protocol's own rule: more waves find a real saving more
often than the rule before, and a saving of zero stays rare."""

from __future__ import annotations

from pathlib import Path

from benchmarks import settle_looks


def _row(rows, spread, saving, rule):  # type: ignore[no-untyped-def]
    return next(
        r
        for r in rows
        if r["spread"] == spread and r["saving"] == saving and r["rule"].startswith(rule)
    )


def test_the_rule_now_finds_more_at_no_more_false_savings(tmp_path: Path) -> None:
    assert settle_looks.main(["--trials", "150", "--out", str(tmp_path)]) == 0
    import json

    rows = json.loads((tmp_path / "settle_looks.json").read_text())["rows"]
    assert len(rows) == len(settle_looks.SPREADS) * len(settle_looks.SAVINGS) * 2
    now, before = _row(rows, 0.09, 0.09, "now"), _row(rows, 0.09, 0.09, "before")
    assert now["measured"] > before["measured"] and now["mean_waves"] > before["mean_waves"]
    assert all(_row(rows, 0.03, 0.0, rule)["measured"] < 0.05 for rule in ("now", "before"))
    # the rule before stops at two more waves; the rule now at the protocol's limit
    assert all(
        r["mean_waves"] <= settle_looks.WAVES + 2 for r in rows if r["rule"].startswith("before")
    )
    assert "| per-wave SD" in (tmp_path / "settle_looks.md").read_text()


def test_bad_trials_is_one_line_and_exit_2(capsys) -> None:  # type: ignore[no-untyped-def]
    assert settle_looks.main(["--trials", "0"]) == 2
    assert capsys.readouterr().err.count("\n") == 1

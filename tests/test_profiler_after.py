"""The profiler-aftermath study (`benchmarks.profiler_after`): each process's after/before ratio
of block medians, the mean and interval per condition, and the table. Nothing measured here:
the processes are saved-result dicts."""

from __future__ import annotations

import pytest

from benchmarks import profiler_after as study


def _process(before: float, after: float) -> dict[str, object]:
    return {"before_ms": [before, before * 1.01, before * 0.99], "after_ms": [after] * 3}


def test_each_process_is_read_against_itself_before_the_call() -> None:
    data = {
        "rounds": 2,
        "blocks": 3,
        "models": {
            "m": {
                "none": [_process(7.0, 7.0), _process(9.0, 9.1)],
                "memory": [_process(7.0, 7.7), _process(9.0, 9.9)],
            }
        },
    }
    rows = {r["condition"]: r for r in study.summary(data)}
    # a slower process (9 ms against 7) does not move the ratio: each is read against itself
    assert rows["memory"]["ratios"] == pytest.approx([1.1, 1.1])
    assert rows["memory"]["mean_ratio"] == pytest.approx(1.1)
    assert rows["none"]["ratios"] == pytest.approx([1.0, 9.1 / 9.0])
    low, high = rows["none"]["ci95_ratio"]
    assert low < 1.0 < high
    text = study.render(list(rows.values()))
    assert "| m " in text and "1.100" in text and "7.00, 9.00" in text

from __future__ import annotations

import json

import pytest

from advisor.core.model import (
    SCHEMA_VERSION,
    Environment,
    ModeResult,
    Report,
    Settings,
    WorkloadInfo,
    report_from_json,
    report_to_json,
)
from advisor.render.json_report import render_json
from tests.support.reports import full_report


def test_round_trip_is_equal() -> None:
    report = full_report()
    text = report_to_json(report)
    assert report_from_json(text) == report
    data = json.loads(text)
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["modes"][2]["error"]["gb_code"] == "GB0059"
    assert data["breaks"][0]["site"]["hints"] == ["hint a", "hint b"]
    assert data["attribution"]["calls"][0]["segments"][2]["break_id"] == "B1"


def test_minimal_report_round_trip() -> None:
    report = Report(
        WorkloadInfo("x", "x", "cpu"),
        Environment("t", "p", "d"),
        Settings(),
        (ModeResult("eager", "ok"),),
    )
    assert report_from_json(report_to_json(report)) == report


def test_unknown_fields_ignored_missing_take_defaults() -> None:
    data = json.loads(report_to_json(full_report()))
    data["from_the_future"] = 1
    del data["warnings"]
    loaded = report_from_json(json.dumps(data))
    assert loaded.warnings == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not valid JSON"),
        ("[]", "not an advisor report"),
        ('{"schema_version": 999}', "schema version 999 is not supported"),
        ('{"schema_version": 1, "workload": 3}', "written by an older advisor"),
        ('{"schema_version": 3, "workload": 3}', "malformed report"),
        ('{"schema_version": "2"}', "is not supported"),
    ],
)
def test_bad_reports(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        report_from_json(text)


def test_json_report_adds_documented_fields_and_reads_back_the_same() -> None:
    report = full_report()
    data = json.loads(render_json(report))
    (entry,) = data["breaks"]
    for key in ("gb_code", "gb_type", "file", "line", "code", "occurrences_per_call", "cost_ms",
                "cost_share", "verdict", "why", "recipe", "what_if", "also_at", "overhead_ms",
                "tensor_work_ms", "python_work_ms", "savings"):  # fmt: skip
        assert key in entry, key
    assert entry["file"] == "/home/u/proj/demo.py"  # absolute in report.json
    assert entry["savings"] == {"isolate": 0.033, "rewrite": None, "delete": 0.035}
    assert entry["what_if"]["knob"] == "reorderable_logging_functions={print}"
    assert data["actions"][0]["title"].startswith("Isolate the print() side effect")
    for key in ("step_ms", "compiled_ms", "breaks_ms", "other_ms", "projected_ms",
                "projected_speedup_vs_eager", "measured_all_fixed_ms"):  # fmt: skip
        assert key in data["ledger"], key
    assert report_from_json(render_json(report)) == report

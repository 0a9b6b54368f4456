from __future__ import annotations

import json

import pytest

from advisor.model import (
    SCHEMA_VERSION,
    Attribution,
    BreakRecord,
    CallTimeline,
    Environment,
    GraphRecord,
    LatencyStats,
    ModeError,
    ModeResult,
    RecompileRecord,
    Report,
    Segment,
    Settings,
    WhatIf,
    WorkloadInfo,
    report_from_json,
    report_to_json,
)


def full_report() -> Report:
    return Report(
        workload=WorkloadInfo("demo", "demo.py:f", "cpu"),
        environment=Environment("2.13.0", "3.11.7", "Xeon", "Linux x86_64", 2, None),
        settings=Settings(warmup=2, repeats=7, threads=1),
        modes=(
            ModeResult(
                "eager",
                "ok",
                0.1,
                LatencyStats(1.0, 0.1, 3, (0.9, 1.0, 1.1), 0.9, 1.1, 4),
                1024,
                "cpu method",
            ),
            ModeResult(
                "default",
                "ok",
                5.0,
                LatencyStats(0.5, 0.05, 3, (0.5, 0.5, 0.6)),
                512,
                recompiles=1,
                matches_eager=True,
                max_abs_diff=1e-6,
                graph_count=2,
            ),
            ModeResult(
                "fullgraph",
                "failed",
                error=ModeError(
                    "Unsupported",
                    "Failed",
                    "GB0059",
                    "Failed to trace builtin operator",
                    "demo.py",
                    7,
                    "print(x)",
                ),
            ),
        ),
        graphs=(GraphRecord("0/0", "f", "demo.py", (5, 6), 3, 0.2, None, "graph_break"),),
        breaks=(
            BreakRecord(
                "B1",
                "GB0059",
                "Failed to trace builtin operator",
                "demo.py",
                7,
                "print(x)",
                "f",
                "expl",
                ("hint a", "hint b"),
                compile_ids=("0/0", "1/0"),
                occurrences_per_call=2.0,
                gap_ms=0.01,
                cost_ms=0.03,
                cost_share=0.06,
                verdict="isolate",
                what_if=WhatIf(
                    "reorderable_logging_functions={print}", "measured", True, 0.5, 0.47, 0.03
                ),
            ),
        ),
        attribution=Attribution(
            0.99,
            "shares",
            2,
            1.7,
            (
                CallTimeline(
                    0,
                    50.0,
                    (
                        Segment("entry", 0.0, 2.0),
                        Segment("compiled", 2.0, 40.0, "0/0"),
                        Segment("gap", 42.0, 8.0, "0/0", "B1"),
                    ),
                ),
            ),
        ),
        recompiles=(RecompileRecord("0/1", "f", "size mismatch", 0.3, "mark_dynamic"),),
        warnings=("noisy",),
        created_at="2026-11-30T10:00:00",
        wall_s=12.5,
    )


def test_round_trip_is_equal() -> None:
    report = full_report()
    text = report_to_json(report)
    assert report_from_json(text) == report
    data = json.loads(text)
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["modes"][2]["error"]["gb_code"] == "GB0059"
    assert data["breaks"][0]["hints"] == ["hint a", "hint b"]
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
        ('{"schema_version": 1, "workload": 3}', "malformed report"),
    ],
)
def test_bad_reports(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        report_from_json(text)

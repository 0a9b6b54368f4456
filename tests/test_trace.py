"""trace.json (Chrome trace events for Perfetto) from recorded artifacts: every slice is well
formed, segments nest inside their call and tile it, and gaps name the break behind them."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from advisor.core.model import (
    Attribution,
    CallTimeline,
    Environment,
    ModeResult,
    Report,
    Segment,
    Settings,
    WorkloadInfo,
)
from advisor.judge.attribute import attribute
from advisor.render.trace import render_trace
from tests.cases.breaks import CASES
from tests.support.reports import full_report
from tests.test_attribute import load

SLICE_KEYS = {"name", "ph", "ts", "dur", "pid", "tid"}
TOLERANCE_US = 0.01


def recorded_report(name: str) -> Report:
    capture, trace = load(name)
    result = attribute(trace, capture)
    return Report(
        workload=WorkloadInfo(name, f"tests/cases/breaks.py:{name}", "cpu"),
        environment=Environment("2.13.0", "3.11", "cpu"),
        settings=Settings(),
        modes=(ModeResult("default", "ok"),),
        graphs=capture.graphs,
        sites=capture.sites,
        attribution=result.attribution,
    )


def slices(text: str) -> list[dict[str, Any]]:
    data = json.loads(text)
    assert set(data) >= {"traceEvents"}
    return [e for e in data["traceEvents"] if e["ph"] != "M"]


def calls_and_children(events: list[dict[str, Any]]) -> list[tuple[dict, list[dict]]]:
    """Each call slice with the segment slices that start inside it (by time, not file order)."""
    calls = [e for e in events if e["name"].startswith("call ")]
    segments = [e for e in events if not e["name"].startswith("call ")]
    out = []
    for call in calls:
        end = call["ts"] + call["dur"]
        inside = [s for s in segments if call["ts"] <= s["ts"] < end]
        out.append((call, sorted(inside, key=lambda s: s["ts"])))
    return out


@pytest.mark.parametrize("name", ["module", "loop", "double", "helper_thrice"])
def test_trace_structure(name: str) -> None:
    report = recorded_report(name)
    events = slices(render_trace(report))
    assert all(SLICE_KEYS <= set(e) and e["ph"] == "X" for e in events)
    grouped = calls_and_children(events)
    assert len(grouped) == len(report.attribution.calls) == 3
    n_segments = sum(len(c.segments) for c in report.attribution.calls)
    assert sum(len(children) for _call, children in grouped) == n_segments
    previous_end = 0.0
    for (call, children), timeline in zip(grouped, report.attribution.calls, strict=True):
        assert call["ts"] >= previous_end - TOLERANCE_US  # calls do not overlap
        previous_end = call["ts"] + call["dur"]
        # Each slice is its attributed segment as recorded: real timelines tile their call, so
        # the clamp to the call (see test_slices_that_poke_out_are_clamped) only trims rounding.
        segments = sorted(timeline.segments, key=lambda s: s.start_us)
        for child, seg in zip(children, segments, strict=True):
            assert (child["pid"], child["tid"]) == (call["pid"], call["tid"])
            assert child["ts"] == pytest.approx(call["ts"] + seg.start_us, abs=TOLERANCE_US)
            assert child["dur"] == pytest.approx(seg.duration_us, abs=TOLERANCE_US)
        assert sum(c["dur"] for c in children) == pytest.approx(call["dur"], abs=TOLERANCE_US)


@pytest.mark.parametrize("name", ["module", "loop", "print"])
def test_gaps_carry_their_break(name: str) -> None:
    report = recorded_report(name)
    events = slices(render_trace(report))
    expected = {(code, line) for code, line in CASES[name].expected()}
    named = [e for e in events if "gb_code" in e.get("args", {})]
    assert named, "no slice names a break"
    for event in named:
        args = event["args"]
        code, line = args["gb_code"], int(args["where"].rsplit(":", 1)[1])
        assert (code, line) in expected
        assert args["where"].startswith("breaks.py:")  # shortened like the report
        assert args["source"] and "BREAK:" in args["source"]  # the marked source line
    kinds = {e["args"]["kind"] for e in named}
    assert kinds == ({"eager"} if CASES[name].frame_skipped else {"gap"})


def test_segment_names_and_compile_ids() -> None:
    events = slices(render_trace(recorded_report("module")))
    names = {e["name"] for e in events}
    assert "guard lookup" in names
    compiled = [e for e in events if e["args"].get("kind") == "compiled"]
    assert compiled and all(e["name"] == f"compiled region {e['args']['compile_id']}"
                            for e in compiled)  # fmt: skip
    gaps = [e for e in events if e["args"].get("kind") == "gap"]
    assert all(e["name"].startswith(f"eager gap after {e['args']['compile_id']}") for e in gaps)
    assert not any("None" in name for name in names)


def test_hand_made_report_times() -> None:
    # full_report's one call: entry 0-2, compiled 0/0 2-42, gap 42-50 (B1 = print at demo.py:7)
    events = slices(render_trace(full_report()))
    by_name = {e["name"]: e for e in events}
    assert (by_name["call 0"]["ts"], by_name["call 0"]["dur"]) == (0.0, 50.0)
    gap = by_name["eager gap after 0/0 (B1)"]
    assert (gap["ts"], gap["dur"]) == (42.0, 8.0)
    assert (
        gap["args"] | {"gb_code": "GB0059", "where": "demo.py:7", "source": "print(x)"}
        == (gap["args"])
    )


def test_slices_that_poke_out_are_clamped_to_their_call() -> None:
    """Rounding can start a segment a hair before its call or end it a hair after, which trace
    viewers take for a nesting error: such a slice is cut to the call, the others are kept."""
    segments = (
        Segment("entry", -0.004, 2.004),  # starts before the call
        Segment("compiled", 2.0, 40.0, compile_id="0/0"),
        Segment("gap", 42.0, 8.003, compile_id="0/0", break_id="B1"),  # ends after it
    )
    report = full_report()
    first = CallTimeline(0, 50.0, segments)
    second = CallTimeline(1, 10.0, (Segment("exit", 9.5, 1.0), Segment("exit", 11.0, 2.0)))
    attribution = dataclasses.replace(report.attribution, calls=(first, second))
    events = slices(render_trace(dataclasses.replace(report, attribution=attribution)))
    placed = [(e["name"], e["ts"], e["dur"]) for e in events]
    assert placed == [
        ("call 0", 0.0, 50.0),
        ("entry", 0.0, 2.0),
        ("compiled region 0/0", 2.0, 40.0),
        ("eager gap after 0/0 (B1)", 42.0, 8.0),
        ("call 1", 50.0, 10.0),
        ("exit", 59.5, 0.5),  # its end cut to the call's
        ("exit", 60.0, 0.0),  # wholly after the call: an empty slice at its end
    ]


def test_report_without_profile_has_no_slices() -> None:
    report = dataclasses.replace(full_report(), attribution=Attribution())
    assert slices(render_trace(report)) == []

"""Profiling real compiled calls: the trace format, calibration, and the Inductor timing path."""

from __future__ import annotations

import pytest

from advisor import harness
from advisor.attribute import attribute
from advisor.capture import compile_and_capture
from advisor.profile import PROBE_RECORD_NAME, RECORD_NAME, ProfileTrace, profile_calls
from tests.cases.breaks import CASES


def test_profile_eager_backend_trace_and_attribution() -> None:
    case = CASES["double"]
    args = case.make_args()
    fn, capture = compile_and_capture(case.build(), args, backend="eager", mark_graphs=True)
    trace = profile_calls(lambda: fn(*args), 4, "cpu", warmup=1)
    assert len(trace.calls) == 4 and all(c.name == RECORD_NAME for c in trace.calls)
    assert len(trace.unprofiled_us) >= 4
    assert trace.overhead_us_per_event is not None and trace.overhead_us_per_event >= 0
    assert ProfileTrace.from_json(trace.to_json()) == trace
    result = attribute(trace, capture)
    assert result.attribution.coverage is not None and result.attribution.coverage >= 0.98
    assert [b.occurrences_per_call for b in result.breaks] == [1.0, 1.0]
    assert result.attribution.method.startswith("work (graph calls, aten ops) from the profile")


@pytest.fixture(scope="module")
def inductor_print():
    case = CASES["print"]
    args = case.make_args()
    fn, capture = compile_and_capture(case.build(), args, backend="inductor")
    return fn, args, capture


@pytest.mark.inductor
def test_inductor_graph_call_markers_and_gap(inductor_print) -> None:
    fn, args, capture = inductor_print
    trace = profile_calls(
        lambda: fn(*args), 5, "cpu", probe=harness.graph_call_probe("cpu"), sessions=2
    )
    assert len(trace.call_unprofiled_us) == 5 and all(u > 0 for u in trace.call_unprofiled_us)
    assert "2 profiler sessions" in (trace.overhead_method or "")
    names = {g.name for c in trace.calls for r in c.children for g in r.children}
    assert any(n.startswith("## Call CompiledFxGraph") for n in names)
    assert all(c.name == RECORD_NAME for c in trace.calls)
    assert len(trace.probe_calls) == 5
    assert all(c.name == PROBE_RECORD_NAME for c in trace.probe_calls)
    result = attribute(trace, capture)
    assert result.graph_call_fixed_us is not None and result.graph_call_fixed_us > 0
    assert set(result.region_count_per_call) == {"0/0", "1/0"}  # the probe's region is not in it
    assert result.attribution.coverage is not None and result.attribution.coverage >= 0.98
    assert set(result.graph_call_us_per_call) == {"0/0", "1/0"}
    (b,) = result.breaks
    assert b.gb_code == "GB0059" and b.occurrences_per_call == 1.0 and b.gap_ms and b.gap_ms > 0
    assert result.guard_lookups_per_call == 2.0

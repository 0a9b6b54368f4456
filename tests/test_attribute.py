"""Segmenter, correction and reduction on recorded artifacts (tests/data, see regenerate.py) and
on synthetic event trees whose numbers are worked out by hand. Fast: no compile, no profiler."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from advisor.core.artifacts import Capture, FrameRecord, ProfileTrace, TraceEvent
from advisor.core.model import BreakSite, Location
from advisor.judge.attribute import attribute, probe_prices, segment_call
from advisor.measure.profile import classified
from tests.cases.breaks import CASES

DATA = Path(__file__).resolve().parent / "data"
RECORDED = [*CASES, "inductor_print"]


def load(name: str) -> tuple[Capture, ProfileTrace]:
    capture = Capture.from_json((DATA / f"{name}.capture.json").read_text())
    trace = ProfileTrace.from_json((DATA / f"{name}.trace.json").read_text())
    return capture, trace


def case_of(name: str) -> str:
    return "print" if name == "inductor_print" else name


@pytest.mark.parametrize("name", RECORDED)
def test_recorded_sites_match_truth(name: str) -> None:
    capture, trace = load(name)
    case = CASES[case_of(name)]
    got = [(s.gb_code, Path(s.where.file).name, s.where.line) for s in capture.sites]
    assert got == [(code, "breaks.py", line) for code, line in case.expected()]
    assert [s.id for s in capture.sites] == [f"B{i + 1}" for i in range(len(got))]
    assert all(s.frame_skipped == case.frame_skipped for s in capture.sites)
    result = attribute(trace, capture)
    assert result.attribution.coverage is not None and result.attribution.coverage >= 0.98
    assert result.attribution.profiled_calls == len(trace.calls) == 3
    expected_occ = case.occurrences or (1.0,) * len(case.breaks)
    assert [result.sites[s.id].occurrences for s in capture.sites] == list(expected_occ)
    assert all(result.sites[s.id].owned_us > 0 for s in capture.sites)


@pytest.mark.parametrize("name", RECORDED)
def test_segments_tile_each_call(name: str) -> None:
    capture, trace = load(name)
    for call in trace.calls:
        cs = segment_call(call, capture)
        assert sum(s.duration_us for s in cs.segments) == pytest.approx(call.duration_us, abs=0.01)
        cursor = call.start_us
        for s in cs.segments:  # ordered, contiguous, non-overlapping
            assert s.start_us == pytest.approx(cursor, abs=0.01)
            cursor = s.start_us + s.duration_us


@pytest.mark.parametrize("name", RECORDED)
def test_every_corrected_call_sums_to_the_given_median(name: str) -> None:
    # Each call is split against its session's unprofiled time and rescaled to the median, so
    # its corrected segments add up to that median exactly, whatever the correction did.
    capture, trace = load(name)
    result = attribute(trace, capture, unprofiled_median_ms=0.5)
    for call in result.attribution.calls:
        assert call.total_us == pytest.approx(500.0, abs=0.01)
    assert result.attribution.calibration.reference == "sessions"


def _kinds(name: str) -> list[tuple[str, str | None, str | None]]:
    capture, trace = load(name)
    cs = segment_call(trace.calls[-1], capture)
    return [(s.kind, s.compile_id, s.break_id) for s in cs.segments]


def test_print_structure_nested_resume_region_carved_out() -> None:
    kinds = _kinds("print")
    assert kinds[0] == ("entry", None, None)
    assert kinds[-1] == ("exit", None, None)
    assert ("gap", "0/0", "B1") in kinds
    # the resume region 1/0 runs inside 0/0: its time is its own, 0/0's gap continues after it
    i = kinds.index(("compiled", "1/0", None))
    assert kinds[i - 1] == ("guard_lookup", "1/0", None)
    assert kinds[i + 1] == ("gap", "0/0", "B1")


def test_inductor_graph_call_marker_splits_region() -> None:
    capture, trace = load("inductor_print")
    names = {c.name for call in trace.calls for r in call.children for c in r.children}
    assert any(n.startswith("## Call CompiledFxGraph") for n in names)
    result = attribute(trace, capture)
    assert set(result.regions) == {"0/0", "1/0"}
    assert all(r.graph_call_us > 0 and r.fixed_us is not None for r in result.regions.values())
    assert result.sites["B1"].owned_us > 0
    assert result.totals.lookups == 2.0
    assert result.probe.graph_call_us is not None and result.probe.glue_us is not None


def test_break_before_any_op_region_is_all_gap() -> None:
    kinds = _kinds("start")
    assert ("compiled", "0/0", None) not in kinds
    assert ("gap", "0/0", "B1") in kinds
    assert ("compiled", "1/0", None) in kinds


def test_two_breaks_in_a_row_middle_region_has_no_graph() -> None:
    capture, trace = load("double")
    kinds = _kinds("double")
    assert ("gap", "1/0", "B2") in kinds and ("compiled", "1/0", None) not in kinds
    assert [s.compile_ids for s in capture.sites] == [("0/0",), ("1/0",)]
    # Each break owns the region entered from its gap: B1 the empty middle one, B2 the last.
    result = attribute(trace, capture)
    first, second = result.sites["B1"], result.sites["B2"]
    assert (first.regions, first.graph_regions) == (1.0, 0.0)
    assert (second.regions, second.graph_regions) == (1.0, 1.0)


def test_break_before_return_has_no_resume_region() -> None:
    capture, trace = load("tail")
    regions = {r.compile_id for r in segment_call(trace.calls[-1], capture).regions}
    assert regions == {"0/0"}
    frame = capture.frame("1/0")
    assert frame is not None and frame.ops is None


def test_recompiled_regions_are_joined() -> None:
    capture, trace = load("recompile")
    result = attribute(trace, capture)
    assert set(result.regions) == {"0/1", "1/1"}
    assert capture.sites[0].compile_ids == ("0/0", "0/1")
    assert [r.compile_id for r in capture.recompiles] == ["0/1", "1/1"]
    assert "size mismatch" in capture.recompiles[0].reason


def test_helper_called_in_loop_counts_three_per_call() -> None:
    capture, trace = load("helper_loop")
    result = attribute(trace, capture)
    assert {cid: r.instances for cid, r in result.regions.items()} == {"1/0": 3.0, "2/0": 3.0}
    (site,) = capture.sites
    assert result.sites[site.id].occurrences == 3.0
    assert site.frame_skipped and site.skip_code == "GB7000"
    assert any(a.function == "f_helper_loop" for a in site.also_at)
    # the skipped outer frame runs eagerly: its time, and the 6 - 1 regions entered from it
    assert result.sites[site.id].owned_us > 0
    assert result.sites[site.id].regions == 5.0


def test_loop_skip_whole_call_is_eager_of_the_break() -> None:
    assert _kinds("loop") == [("eager", None, "B1")]


def test_submodule_break_is_one_site_with_the_callers_line() -> None:
    capture, trace = load("module")
    result = attribute(trace, capture)
    (site,) = capture.sites
    assert site.compile_ids == ("0/0", "1/0")
    assert result.sites[site.id].occurrences == 1.0
    assert [a.line for a in site.also_at] == [_outer_module_line()]
    kinds = _kinds("module")
    assert ("gap", "0/0", "B1") in kinds and ("gap", "1/0", "B1") in kinds


def _outer_module_line() -> int:
    from tests.cases.breaks import FILE

    lines = Path(FILE).read_text().splitlines()
    return next(i for i, t in enumerate(lines, 1) if t.rstrip().endswith("# OUTER:module"))


def test_json_round_trip_of_recorded_artifacts() -> None:
    capture, trace = load("module")
    assert Capture.from_json(capture.to_json()) == capture
    assert ProfileTrace.from_json(trace.to_json()) == trace


# --- synthetic trees: exact numbers -----------------------------------------------------------


def ev(name: str, start: float, dur: float, *children: TraceEvent) -> TraceEvent:
    n_events = 1 + sum(c.n_events for c in children)
    return TraceEvent(name, start, dur, tuple(children), n_events, **classified(name))


def synthetic_capture() -> Capture:
    site = BreakSite(
        id="B1",
        gb_code="GB0059",
        gb_type="t",
        where=Location("f.py", 3),
        compile_ids=("0/0",),
    )
    return Capture(
        sites=(site,),
        frames=(
            FrameRecord("0/0", "f", "f.py", 1, ops=2, break_ids=("B1",), end_break_id="B1"),
            FrameRecord("1/0", "resume", "f.py", 3, ops=2, resumes="0/0"),
        ),
        root_compile_id="0/0",
    )


def synthetic_call(*gap_ops: TraceEvent, graph_op: bool = True) -> TraceEvent:
    """Region 0/0 ends in break B1; its gap (30-40) runs `gap_ops` (default: an is_nonzero);
    its graph call (20-30) runs an aten::sin (21-23) unless `graph_op` is False."""
    return ev(
        "advisor::call",
        0,
        100,
        ev("TorchDynamo Cache Lookup", 10, 5),
        ev(
            "Torch-Compiled Region: 0/0",
            15,
            75,
            ev("## Call CompiledFxGraph k ##", 20, 10, *([ev("aten::sin", 21, 2)] * graph_op)),
            *(gap_ops or (ev("aten::is_nonzero", 32, 3),)),
            ev("TorchDynamo Cache Lookup", 40, 4),
            ev("Torch-Compiled Region: 1/0", 44, 30, ev("## Call CompiledFxGraph j ##", 50, 10)),
        ),
    )


def calibrated(per_event_us: float):  # type: ignore[no-untyped-def]
    from advisor.core.artifacts import EventCalibration

    return EventCalibration(per_event_us, 0.0, 0.0, 1.0, 1, 1)


def test_profiler_cost_comes_out_where_the_events_are() -> None:
    from advisor.judge.correct import _take_out
    from advisor.judge.segments import RawSegment

    segs = (
        RawSegment("compiled", 0, 10, n_struct=2, n_struct_ends=0),
        RawSegment("guard_lookup", 10, 1, n_struct=1, n_struct_ends=1),
        RawSegment("gap", 11, 20, n_struct=0, n_struct_ends=0),
    )
    # 2 µs per event, a half per start or end: 2, 2 (capped at the lookup's 1), 0; the other
    # 3 of the 6 µs excess by the time left (8 and 20 µs): the event-free gap gives 3 x 20 / 28.
    taken = _take_out(6.0, [10.0, 1.0, 20.0], segs, 2.0)
    assert taken == pytest.approx([2.0 + 3 * 8 / 28, 1.0, 3 * 20 / 28])
    # events that would take more than the excess each give their share of it
    assert _take_out(1.5, [10.0, 1.0, 20.0], segs, 2.0) == pytest.approx([1.0, 0.5, 0.0])


def test_synthetic_segments_exact() -> None:
    cs = segment_call(synthetic_call(), synthetic_capture())
    got = [(s.kind, s.compile_id, s.break_id, s.start_us, s.duration_us) for s in cs.segments]
    assert got == [
        ("entry", None, None, 0, 10),
        ("guard_lookup", "0/0", None, 10, 5),
        ("compiled", "0/0", None, 15, 15),  # pregraph 15-20 + graph call 20-30
        ("gap", "0/0", "B1", 30, 10),  # 30-40 incl. aten::is_nonzero
        ("guard_lookup", "1/0", None, 40, 4),
        ("compiled", "1/0", None, 44, 30),  # return path of a region ending in return
        ("gap", "0/0", "B1", 74, 16),
        ("exit", None, None, 90, 10),
    ]
    assert [r.ancestors for r in cs.regions] == [(), ("0/0",)]


def test_synthetic_attribution_work_and_overhead() -> None:
    trace = ProfileTrace("cpu", (synthetic_call(),), calibration=calibrated(1.0))
    result = attribute(trace, synthetic_capture())
    # Work, less 1 µs per aten event: graph k 10 - 1 (aten::sin), graph j 10, aten::is_nonzero
    # 3 - 1 = 21 µs. The other 77 profiled µs are overhead. Without unprofiled timing the call
    # keeps its 100 µs, 2 µs more than work + overhead: overhead is never scaled up on its own,
    # so that is drift, and work and overhead are scaled alike (x 100/98).
    drift = 100 / 98
    assert result.totals.call_us == pytest.approx(100.0)
    assert result.regions["0/0"].graph_call_us == pytest.approx(9.0 * drift)
    assert result.regions["1/0"].graph_call_us == pytest.approx(10.0 * drift)
    site = result.sites["B1"]
    assert site.work_us == pytest.approx(2.0 * drift)
    # the gap (30-40 and 74-90): its work + its 23 µs of overhead
    assert site.owned_us == pytest.approx((2.0 + 23) * drift)
    assert site.occurrences == 1.0
    assert (site.regions, site.graph_regions) == (1.0, 1.0)  # region 1/0 entered from the gap
    assert result.attribution.coverage == 1.0
    # Scaled to 45.5 µs: 52.5 µs of profiler time to take out of the 77 µs of overhead. Seven
    # structural events start in the call (call record, 2 lookups, 2 regions, 2 graph calls):
    # 7.5 µs each, half at its start, half right after its end. Event halves per segment:
    # entry 1, lookup 0/0 1, compiled 0/0 3 (region, graph k, lookup's end), gap 1 (graph k's
    # end), lookup 1/0 1, compiled 1/0 4, gap 1 (region 1/0's end), exit 1 (region 0/0's end):
    # 3.75 µs each, capped by the segment's overhead (compiled 0/0 has 5): 42.5 µs. The other
    # 10 µs come out of the 34.5 µs of overhead left, by time. The gaps (7 + 16 µs of overhead)
    # keep 15.5 x (1 - 10 / 34.5), plus the is_nonzero's 2 µs of work.
    scaled = attribute(trace, synthetic_capture(), unprofiled_median_ms=0.0455)
    assert scaled.attribution.calls[0].total_us == pytest.approx(45.5)
    assert scaled.attribution.calibration.overhead_scale == pytest.approx((45.5 - 21) / 77)
    assert scaled.attribution.calibration.structural_event_us == pytest.approx(7.5)
    assert scaled.sites["B1"].owned_us == pytest.approx(2.0 + 15.5 * 24.5 / 34.5)
    # work alone above the unprofiled time: every segment scaled alike, with a warning
    fallback = attribute(trace, synthetic_capture(), unprofiled_median_ms=0.020)
    assert fallback.attribution.calls[0].total_us == pytest.approx(20.0)
    assert [n.kind for n in fallback.notes] == ["profile_fallback"]
    # ...each segment keeping its profiled work/overhead split (graph k: 10 µs of work, x 0.2)
    assert fallback.regions["0/0"].graph_call_us == pytest.approx(10.0 * 0.2)


def test_split_uses_profile_time_unprofiled_calls_then_rescales_to_the_given_median() -> None:
    # Unprofiled calls timed right before the profile: 45.5 µs. The harness's median, timed
    # earlier in a slower phase of the machine, is twice that. The work/overhead split is made
    # against the 45.5 µs of the same phase, then every segment is doubled: drift never lands
    # on the overhead alone.
    trace = ProfileTrace(
        "cpu", (synthetic_call(),), unprofiled_us=(45.5,), calibration=calibrated(1.0)
    )
    result = attribute(trace, synthetic_capture(), unprofiled_median_ms=0.091)
    assert result.attribution.calls[0].total_us == pytest.approx(91.0)
    assert result.totals.call_us == pytest.approx(91.0)
    assert result.attribution.calibration.overhead_scale == pytest.approx((45.5 - 21) / 77)
    assert result.sites["B1"].owned_us == pytest.approx(2 * (2.0 + 15.5 * 24.5 / 34.5))
    assert result.regions["1/0"].graph_call_us == pytest.approx(2 * 10.0)
    assert result.attribution.calibration.rescale == pytest.approx(2.0)
    same_phase = attribute(trace, synthetic_capture(), unprofiled_median_ms=0.0455)
    assert same_phase.attribution.calibration.rescale == pytest.approx(1.0)
    assert same_phase.sites["B1"].owned_us == pytest.approx(result.sites["B1"].owned_us / 2)


def test_compute_bound_work_in_a_gap_is_kept_apart() -> None:
    # The gap after region 0/0 runs an eager matmul (4 µs) and an add (2 µs): both are eager
    # tensor work, and the matmul is the part that would take the same time compiled.
    call = synthetic_call(ev("aten::mm", 31, 4), ev("aten::add", 36, 2))
    cs = segment_call(call, synthetic_capture())
    gap = next(s for s in cs.segments if s.kind == "gap")
    assert (gap.work_us, gap.kept_us) == (6.0, 4.0)
    trace = ProfileTrace("cpu", (call,), calibration=calibrated(1.0))
    result = attribute(trace, synthetic_capture())
    # corrected alike: (6 - 2 events x 1 µs) of work, two thirds of it the matmul's
    site = result.sites["B1"]
    assert site.kept_us == pytest.approx(site.work_us * 4 / 6)


def test_compute_bound_ops_are_the_library_kernels() -> None:
    from advisor.measure.torch_adapter import keeps_time_compiled

    for name in ("aten::mm", "aten::addmm", "aten::linear", "aten::conv2d", "aten::lstm",
                 "aten::_scaled_dot_product_flash_attention", "aten::linalg_solve",
                 "aten::mkldnn_convolution", "aten::bmm.out"):  # fmt: skip
        assert keeps_time_compiled(name), name
    for name in ("aten::add", "aten::relu", "aten::sum", "aten::view", "aten::nonzero",
                 "## Call CompiledFxGraph k ##", "aten::mmx"):  # fmt: skip
        assert not keeps_time_compiled(name), name


def test_each_call_is_split_against_its_own_session_reference() -> None:
    # Two profiled calls from two sessions: the first session's unprofiled calls took 45.5 µs,
    # the second's 91 µs (the machine slowed down). Each call's split uses its own session's
    # reference, then both are scaled to the mode's 91 µs median.
    trace = ProfileTrace(
        "cpu",
        (synthetic_call(), synthetic_call()),
        unprofiled_us=(45.5, 45.5, 91.0, 91.0),
        calibration=calibrated(1.0),
        call_unprofiled_us=(45.5, 91.0),
    )
    result = attribute(trace, synthetic_capture(), unprofiled_median_ms=0.091)
    first, second = result.attribution.calls
    assert first.total_us == pytest.approx(91.0) and second.total_us == pytest.approx(91.0)
    gap = {
        c: sum(s.duration_us for s in t.segments if s.kind == "gap")
        for c, t in ((0, first), (1, second))
    }
    # The cost per structural event is the median over the calls: (52.5 / 7 + 7 / 7) / 2 =
    # 4.25 µs, 2.125 per half. First call: 26.25 µs at the events (compiled 0/0 capped at 5),
    # the other 26.25 out of the 50.75 µs left by time: the gaps keep 18.75 x 24.5 / 50.75,
    # then x2 to the median. Second call: the events would take 26.25 µs, more than its 7 µs
    # excess, so each takes 7 / 26.25 of its share: the gaps give 2 x 2.125 x 7 / 26.25.
    assert gap[0] == pytest.approx(2 * (2.0 + 18.75 * 24.5 / 50.75), abs=0.01)
    assert gap[1] == pytest.approx(2.0 + 23 - 4.25 * 7 / 26.25, abs=0.01)


def probe_call(graph_a: float = 6.0) -> TraceEvent:
    """The break probe: region 9/0 (graph a) breaks, resumes in region 10/0 (graph b)."""
    return ev(
        "advisor::graph_call_probe",
        0,
        52,
        ev("TorchDynamo Cache Lookup", 2, 3),
        ev(
            "Torch-Compiled Region: 9/0",
            8,
            40,
            ev("## Call CompiledFxGraph a ##", 12, graph_a),
            ev("TorchDynamo Cache Lookup", 24, 2),
            ev("Torch-Compiled Region: 10/0", 27, 15, ev("## Call CompiledFxGraph b ##", 30, 8)),
        ),
    )


def test_probe_prices_by_hand() -> None:
    # No per-event cost and no unprofiled reference: the profiled times stand. Graph calls 6 and
    # 8 µs: 7 each. The gap of 9/0 (18-24 and 42-48): 12 µs of glue. Lookups 2-8 (with the
    # glue into the region) and 24-27: 4.5 µs per region. Compiled 8-18 and 27-42 = 25 µs, of
    # which 14 µs graph calls: 5.5 µs of fixed overhead per region.
    trace = ProfileTrace("cpu", (), probe_calls=(probe_call(), probe_call()))
    prices = probe_prices(trace, rescale=1.0)
    assert prices.graph_call_us == pytest.approx(7.0)
    assert prices.glue_us == pytest.approx(12.0)
    assert prices.lookup_us == pytest.approx(4.5)
    assert prices.region_fixed_us == pytest.approx(5.5)
    assert prices.calls == 2
    doubled = probe_prices(trace, rescale=2.0)
    assert doubled.glue_us == pytest.approx(24.0)
    timed = dataclasses.replace(trace, probe_break_us=11.0)
    assert probe_prices(timed, rescale=2.0).break_us == pytest.approx(22.0)
    assert probe_prices(ProfileTrace("cpu", ()), 1.0).graph_call_us is None


def test_helper_called_thrice_in_straight_line_counts_three() -> None:
    # Regions nest (each resume runs inside the previous region) and every outer region ends in
    # the same break: only the innermost instances (the helper's own frame) are occurrences.
    capture, trace = load("helper_thrice")
    result = attribute(trace, capture)
    (site,) = capture.sites
    assert not site.frame_skipped
    assert result.sites[site.id].occurrences == 3.0
    assert len(site.compile_ids) > 1
    # every region after the first is entered from the helper's gaps
    total = sum(r.instances for r in result.regions.values())
    assert result.sites[site.id].regions == total - 1

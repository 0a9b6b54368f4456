"""Root causes, the cost model, decisions, the ledger and actions, on synthetic traces whose
numbers are worked out by hand, and the taxonomy. No compile, no torch."""

from __future__ import annotations

import dataclasses

import pytest

from advisor.core.artifacts import Capture, FrameRecord, ProfileTrace, TraceEvent
from advisor.core.model import (
    BreakSite,
    LatencyStats,
    Location,
    ModeResult,
    RecompileRecord,
    WhatIf,
)
from advisor.core.taxonomy import category_for, knob_for
from advisor.judge.advise import advise
from advisor.judge.attribute import attribute
from advisor.measure.torch_adapter import recompile_cause
from tests.test_attribute import ev, probe_call, synthetic_call

STEP_SAMPLES = 20


def mode(name: str, median_ms: float, spread_ms: float = 0.0, status: str = "ok") -> ModeResult:
    """A mode whose samples are spread evenly over median ± spread."""
    n = STEP_SAMPLES
    samples = tuple(median_ms + spread_ms * (2 * i / (n - 1) - 1) for i in range(n))
    lat = LatencyStats(median_ms, spread_ms, n, samples)
    return ModeResult(name, status, latency=lat, matches_eager=True)


def site(
    site_id: str = "B1",
    code: str = 'print("x")',
    gb_code: str | None = "GB0059",
    gb_type: str = "Failed to trace builtin operator",
    file: str = "/home/u/model.py",
    compile_ids: tuple[str, ...] = ("0/0",),
    **kw,  # type: ignore[no-untyped-def]
) -> BreakSite:
    return BreakSite(
        id=site_id,
        gb_code=gb_code,
        gb_type=gb_type,
        where=Location(file, 10 + int(site_id[1:]), "forward", code),
        compile_ids=compile_ids,
        **kw,
    )


# One call: region 0/0 (lookup 10-15, pregraph 15-20, graph 20-30) breaks at B1; its gap (30-40,
# 74-90) runs an aten op (32-35) and calls the resume region 1/0 (lookup 40-44, region 44-74 with
# a 10 µs graph, return path); entry 0-10, exit 90-100. With no per-event cost and no unprofiled
# reference every profiled µs stands.
def break_call() -> TraceEvent:
    return synthetic_call(graph_op=False)


def break_capture(the_site: BreakSite | None = None) -> Capture:
    return Capture(
        sites=(the_site or site(),),
        frames=(
            FrameRecord("0/0", "f", "f.py", 1, ops=2, break_ids=("B1",), end_break_id="B1"),
            FrameRecord("1/0", "resume", "f.py", 3, ops=2, resumes="0/0"),
        ),
        root_compile_id="0/0",
    )


def break_trace() -> ProfileTrace:
    return ProfileTrace("cpu", (break_call(),), probe_calls=(probe_call(), probe_call()))


def run_advise(
    the_site=None, step_ms=0.1, spread_ms=0.0, what_ifs=(), share=0.01, run_spread=None, **modes
):  # type: ignore[no-untyped-def]
    capture = break_capture(the_site)
    att = attribute(break_trace(), capture)
    all_modes = {"default": mode("default", step_ms, spread_ms), **modes}
    return advise(att, capture, all_modes, tuple(what_ifs), share, run_spread=run_spread)


def test_cost_terms_parts_and_savings_by_hand() -> None:
    # Regions: 0/0 fixed 15 - 10 = 5 µs, lookup 5; 1/0 fixed 30 - 10 = 20, lookup 4. The lighter
    # side: lookup min(5, 4) = 4, region overhead min(5, 20) = 5. Graph call: the probe's 7 µs
    # (below the workload's 10 µs graph calls). Glue: the probe's 12 µs.
    # B1 owns 1 extra region (1/0, calling a graph): fixed = 4 + 5 + 7 = 16 µs. It owns the gap,
    # 10 + 16 = 26 µs, of which 3 µs tensor work: 12 µs glue and 11 µs of Python remain.
    advice = run_advise()
    (entry,) = advice.breaks
    t = entry.terms
    assert (t.regions, t.graph_regions) == (1.0, 1.0)
    assert (t.guard_lookup_us, t.region_overhead_us, t.graph_call_us) == (4.0, 5.0, 7.0)
    assert (t.glue_us, t.gap_us, t.tensor_work_us, t.kept_us) == (12.0, 26.0, 3.0, 0.0)
    assert t.overhead_cap == 1.0
    assert entry.parts.overhead_ms == pytest.approx(0.028)
    assert entry.parts.tensor_work_ms == pytest.approx(0.003)
    assert entry.parts.python_work_ms == pytest.approx(0.011)
    assert entry.parts.total_ms == pytest.approx(0.042)  # fixed 16 + owned 26
    # A print: moving it saves the overhead, deleting it everything; no rewrite applies.
    assert entry.savings.isolate == pytest.approx(0.028)
    assert entry.savings.delete == pytest.approx(0.042)
    assert entry.savings.rewrite is None
    d = entry.decision
    assert d is not None and (d.category, d.fix, d.basis, d.verdict) == (
        "print",
        "isolate",
        "estimate",
        "isolate",
    )
    assert entry.cost_ms == pytest.approx(0.028) and entry.cost_share == pytest.approx(0.28)


def test_ledger_adds_up_by_hand() -> None:
    # step 100 µs = compiled that stays + the break's share (42) + other (entry 10 + exit 10).
    # Compiled that stays: lookups 9 + compiled 45 - the 16 µs of fixed prices charged = 38.
    ledger = run_advise().ledger
    assert ledger is not None
    assert ledger.step_ms == pytest.approx(0.1)
    assert ledger.breaks_ms == pytest.approx(0.042)
    assert ledger.other_ms == pytest.approx(0.020)
    assert ledger.compiled_ms == pytest.approx(0.038)
    assert ledger.saving_ms == pytest.approx(0.028)
    assert ledger.projected_ms == pytest.approx(0.072)
    assert ledger.measured_all_fixed_ms is None  # no fullgraph mode
    # guard lookups: 9 µs over 2 lookups against the probe's 4.5 µs each: no excess
    assert ledger.guard_lookup_ms == pytest.approx(0.009) and ledger.guard_excess_ms == 0.0


def test_rewrite_category_saves_python_and_fusible_work() -> None:
    branch = site(code="if x.sum() > 0:", gb_code="GB0170", gb_type="Data-dependent branching")
    (entry,) = run_advise(branch).breaks
    assert entry.savings.rewrite == pytest.approx(0.028 + 0.011 + 0.003)
    assert entry.savings.isolate is None
    assert entry.decision is not None and entry.decision.verdict == "rewrite"
    assert entry.cost_ms == pytest.approx(0.042)


def test_verdicts_follow_threshold_and_noise() -> None:
    # saving 0.028 ms: 28% of a 0.1 ms step; 0.28% of a 10 ms step; under the noise of a
    # step whose samples spread ±1 ms.
    assert run_advise(step_ms=0.1).breaks[0].verdict == "isolate"
    big = run_advise(step_ms=10.0).breaks[0]
    assert big.verdict == "ignore" and big.decision and big.decision.reason == "below_share"
    noisy = run_advise(step_ms=0.1, spread_ms=1.0, share=0.0001).breaks[0]
    assert noisy.verdict == "ignore" and noisy.decision and noisy.decision.reason == "below_noise"
    assert run_advise(step_ms=10.0, share=0.0001).breaks[0].verdict == "isolate"


def what_if(**kw) -> WhatIf:  # type: ignore[no-untyped-def]
    base = dict(
        knob="reorderable_logging_functions={print}",
        setting="reorderable_logging_functions",
        fix="isolate",
        status="measured",
        targets=("B1",),
        removed=("B1",),
        baseline_ms=0.1,
        variant_ms=0.05,
        saving_ms=0.05,
        saving_ci_ms=(0.04, 0.06),
        matches_eager=True,
    )
    return WhatIf(**{**base, **kw})


def test_a_clean_measured_knob_decides_and_its_miss_is_kept() -> None:
    advice = run_advise(what_ifs=[what_if()])
    (entry,) = advice.breaks
    d = entry.decision
    assert d is not None and (d.basis, d.fix, d.knob_outcome) == ("measured", "knob", "removed")
    assert entry.cost_ms == pytest.approx(0.05) and d.measured_ci_ms == (0.04, 0.06)
    # estimate 0.028 (isolate) against 0.05 measured, apart by more than the 0.01 noise
    assert d.estimate_miss == pytest.approx(0.028 / 0.05 - 1)
    (action,) = [a for a in advice.actions if a.kind == "knob"]
    assert action.measured and action.breaks == ("B1",) and action.saving_ms == 0.05
    assert not [a for a in advice.actions if a.kind in ("code", "isolate")]  # covered by the knob


def test_a_knob_without_saving_bounds_the_entry() -> None:
    flat = what_if(saving_ms=0.001, saving_ci_ms=(-0.004, 0.006))
    (entry,) = run_advise(what_ifs=[flat]).breaks
    d = entry.decision
    assert d is not None and d.basis == "bounded" and entry.cost_ms == pytest.approx(0.006)
    assert not [a for a in run_advise(what_ifs=[flat]).actions if a.kind == "knob" and a.measurable]
    # moved: the variant breaks again next to it, which prices the knob, not removing the break
    moved = what_if(saving_ms=0.0, saving_ci_ms=(-0.003, 0.002), new_breaks=(Location("m.py", 12),))
    (entry,) = run_advise(what_ifs=[moved]).breaks
    assert entry.decision is not None and entry.decision.knob_outcome == "moved"
    assert entry.decision.basis == "estimate" and entry.cost_ms == pytest.approx(0.028)
    assert entry.decision.measured_ms == 0.0 and entry.decision.measured_ci_ms == (-0.003, 0.002)


def test_a_knob_that_keeps_the_break_changes_nothing() -> None:
    kept = what_if(removed=())
    (entry,) = run_advise(what_ifs=[kept]).breaks
    d = entry.decision
    assert d is not None and d.knob_outcome == "kept" and d.basis == "estimate"
    assert entry.cost_ms == pytest.approx(0.028)


def test_library_break_needs_a_library_change_unless_a_knob_measures_a_fix() -> None:
    lib = site(
        code="return bool(done.max() == 0)",
        gb_code="GB0124",
        gb_type="Unsupported Tensor.item() call",
        file="/venv/lib/python3.11/site-packages/transformers/generation/utils.py",
    )
    reached = dataclasses.replace(
        lib, reached_from=Location("/home/u/proj/loop.py", 44, "f", "y = t(x)")
    )
    advice = run_advise(reached)
    (entry,) = advice.breaks
    assert entry.decision is not None and entry.decision.library
    assert entry.verdict == "rewrite"  # the library's code to rewrite: upstream
    # the action is at the library line, never at the user's calling line
    assert [(a.kind, a.where) for a in advice.actions] == [("keep", None), ("upstream", lib.where)]
    # and its estimate is kept apart from the projection
    assert advice.ledger is not None and advice.ledger.library_ms == pytest.approx(entry.cost_ms)
    assert advice.ledger.projected_ms == pytest.approx(advice.ledger.step_ms)
    knob = what_if(knob="capture_scalar_outputs=True", setting="capture_scalar_outputs",
                   fix="rewrite")  # fmt: skip
    fixed_advice = run_advise(reached, what_ifs=[knob])
    (fixed,) = fixed_advice.breaks
    assert fixed.verdict == "rewrite" and fixed.decision and fixed.decision.basis == "measured"
    assert [a.kind for a in fixed_advice.actions] == ["knob"]


def test_fullgraph_that_matches_and_runs_faster_is_measured_truth() -> None:
    advice = run_advise(fullgraph=mode("fullgraph", 0.06))
    ledger = advice.ledger
    assert ledger is not None and ledger.measured_all_fixed_ms == pytest.approx(0.06)
    assert ledger.projection_miss == pytest.approx(0.072 / 0.06 - 1)
    (action,) = [a for a in advice.actions if a.kind == "fullgraph"]
    assert action.measured and action.saving_ms == pytest.approx(0.04)
    failed = run_advise(fullgraph=ModeResult("fullgraph", "failed"))
    assert failed.ledger and failed.ledger.measured_all_fixed_ms is None
    wrong = run_advise(fullgraph=dataclasses.replace(mode("fullgraph", 0.06), matches_eager=False))
    assert wrong.ledger and wrong.ledger.measured_all_fixed_ms is None


def guard_skip(**kw) -> WhatIf:  # type: ignore[no-untyped-def]
    """The default mode timed with and without guard evaluation: no break targeted."""
    guards = dict(
        knob="skip_guard_eval_unsafe=True",
        setting="torch.compiler.set_stance",
        fix="guards",
        kind="guards",
        targets=(),
        removed=(),
        variant_ms=0.08,
        saving_ms=0.02,
        saving_ci_ms=(0.01, 0.03),
    )
    return what_if(**{**guards, **kw})


def test_guard_evaluation_measured_decides_the_guard_action() -> None:
    # the synthetic trace's guards cost no more than the probe's: no estimated action
    assert not [a for a in run_advise().actions if a.kind == "guards"]
    advice = run_advise(what_ifs=[guard_skip()])
    (action,) = [a for a in advice.actions if a.kind == "guards"]
    assert action.measured and action.saving_ms == 0.02 and action.saving_ci_ms == (0.01, 0.03)
    (entry,) = advice.breaks  # no break is measured by it
    assert entry.decision is not None and entry.decision.basis == "estimate"
    for no_saving in (
        guard_skip(saving_ms=0.001, saving_ci_ms=(-0.004, 0.006)),
        guard_skip(matches_eager=False),
    ):
        assert not [a for a in run_advise(what_ifs=[no_saving]).actions if a.kind == "guards"]


# --- root causes --------------------------------------------------------------------------------


def skipped_capture() -> Capture:
    # The function's own frame 0/0 was skipped; Dynamo met B1, B2 and B3 compiling it, B3 last.
    # Its layers compile separately as 1/0. B4 is a cold path that never runs.
    skipped = [
        site(f"B{i}", code="x", compile_ids=("0/0",), skipped_frames=("0/0",)) for i in (1, 2, 3)
    ]
    sites = (*skipped, site("B4", code="y", compile_ids=("5/0",)))
    frames = (
        FrameRecord("0/0", "f", "f.py", 1, skipped=True, break_ids=("B1", "B2", "B3"),
                    end_break_id="B3"),
        FrameRecord("1/0", "layer", "f.py", 9, ops=3),
        FrameRecord("5/0", "cold", "f.py", 30, ops=1, break_ids=("B4",), end_break_id="B4"),
    )  # fmt: skip
    return Capture(sites=sites, frames=frames, root_compile_id="0/0")


def skipped_call() -> TraceEvent:
    layer = ("Torch-Compiled Region: 1/0", "## Call CompiledFxGraph l ##")
    return ev(
        "advisor::call",
        0,
        100,
        ev("aten::add", 2, 4),
        ev("TorchDynamo Cache Lookup", 10, 4),
        ev(layer[0], 14, 20, ev(layer[1], 16, 10)),
        ev("TorchDynamo Cache Lookup", 40, 4),
        ev(layer[0], 44, 20, ev(layer[1], 46, 10)),
    )


def test_a_skipped_frame_is_one_entry_owning_its_time_with_its_causes() -> None:
    capture = skipped_capture()
    trace = ProfileTrace("cpu", (skipped_call(),), probe_calls=(probe_call(),))
    advice = advise(attribute(trace, capture), capture, {"default": mode("default", 0.1)})
    ids = [e.id for e in advice.breaks]
    assert sorted(ids) == ["B3", "B4"]  # B1, B2 own nothing: causes of B3, not entries
    owner = advice.breaks[ids.index("B3")]
    assert [c.id for c in owner.causes] == ["B1", "B2"]
    assert owner.terms.skipped_frame
    # eager time: 0-10, 34-40, 64-100 = 52 µs, 4 of it aten work; one extra region (the second
    # layer: compiled as one frame, the two would be one region)
    assert owner.terms.gap_us == pytest.approx(52.0)
    assert owner.terms.tensor_work_us == pytest.approx(4.0)
    assert owner.terms.regions == 1.0
    # a skipped frame's Python is overhead (it goes when the frame compiles), none is "stays"
    assert owner.parts.python_work_ms == 0.0
    cold = advice.breaks[ids.index("B4")]
    assert cold.cost_ms == 0.0 and cold.decision and cold.decision.reason == "never_ran"
    assert advice.ledger is not None
    assert sum(e.cost_share or 0.0 for e in advice.breaks) <= 1.0
    assert advice.ledger.breaks_ms <= advice.ledger.step_ms


# --- taxonomy and recompiles ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("the_site", "category", "action"),
    [
        (site(code='print("x")', gb_type="Failed to trace builtin operator",
              explanation="builtin operator `print`"), "print", "isolate"),
        (site(code="len(x)", explanation="operator `len`"), "other", "rewrite"),
        (site(code="if x.sum() > 0:", gb_code="GB0170", gb_type="Data-dependent branching"),
         "data_dependent_branch", "rewrite"),
        (site(code="if x.sum() > 0:", gb_code=None, gb_type="generic_jump TensorVariable()"),
         "data_dependent_branch", "rewrite"),
        (site(code="n = x.item()", gb_code="GB0124",
              gb_type="Unsupported Tensor.item() call with capture_scalar_outputs=False"),
         "scalar_extraction", "rewrite"),
        (site(code="x.tolist()", gb_code="GB0033", gb_type="Data dependent operator"),
         "scalar_extraction", "rewrite"),
        (site(code="idx = m.nonzero()", gb_code="GB0036", gb_type="Dynamic shape operator"),
         "dynamic_shape", "rewrite"),
        (site(code="helper(x)", gb_code="GB0098",
              gb_type="Skip calling `torch.compiler.disable()`d function"), "disabled", "isolate"),
        (site(code='LOG.warning("x")', gb_code="GB0291",
              gb_type="logging.Logger method not supported for non-export cases"),
         "logging", "isolate"),
        (site(code="log = logging.getLogger()", gb_code="GB6215",
              gb_type="Unresolved GetAttrVariable comparison",
              file="/usr/lib/python3.11/logging/__init__.py"), "logging", "isolate"),
        (site(code="torch.from_numpy(a)", gb_code="GB0231",
              gb_type="call `torch.from_numpy` with `torch._dynamo.config.trace_numpy=False`"),
         "numpy", "rewrite"),
        (site(code="scipy.special.erf(a)", gb_code="GB0007",
              gb_type="Attempted to call function marked as skipped"), "third_party", "isolate"),
        (site(code="weird(x)", gb_code="GB9999", gb_type="A code from the future",
              file="/venv/lib/python3.11/site-packages/lib/x.py"), "third_party", "isolate"),
        (site(code="np.fft.fft(a)", gb_code="GB9999", gb_type="A code from the future"),
         "numpy", "rewrite"),
        (site(code="torch._dynamo.graph_break()", gb_code="GB0025",
              gb_type="Call to `torch._dynamo.graph_break()`"), "explicit", "rewrite"),
    ],
)  # fmt: skip
def test_taxonomy(the_site: BreakSite, category: str, action: str) -> None:
    cat = category_for(the_site)
    assert (cat.key, cat.action) == (category, action)


def test_knobs() -> None:
    item = site(code="n = x.item()", gb_code="GB0124", gb_type="Unsupported Tensor.item() call")
    knob = knob_for(item)
    assert knob is not None and knob.setting == "capture_scalar_outputs" and knob.fix == "rewrite"
    log = site(code='logger.warning("slow")', gb_code="GB0291", gb_type="logging.Logger method")
    log_knob = knob_for(log)
    assert log_knob is not None and log_knob.value_spec == "logger:warning"
    assert log_knob.fix == "delete" and log_knob.behaviour == "logging_noop"
    branch = site(code="if x > 0:", gb_code="GB0170", gb_type="Data-dependent branching")
    assert knob_for(branch) is None


@pytest.mark.parametrize(
    ("reason", "cause", "dim"),
    [
        ("0/1: tensor 'x' size mismatch at index 1. expected 16, actual 32", "size", 1),
        ("0/1: tensor 'x' dtype mismatch. expected Float, actual Double", "dtype", None),
        ("0/1: tensor 'x' rank mismatch. expected 2, actual 3", "rank", None),
        ("0/0: k == 2  # return (x * k).sin()", "value", None),
        ("0/1: something else entirely", "other", None),
    ],
)
def test_recompile_causes(reason: str, cause: str, dim: int | None) -> None:
    assert recompile_cause(reason) == (cause, dim)


def test_recompile_actions_and_backend_switches() -> None:
    capture = dataclasses.replace(
        break_capture(),
        recompiles=(
            RecompileRecord("0/1", "f", "0/0: BACKEND_MATCH failure: ...", backend_switch=True),
            RecompileRecord(
                "0/2", "f", "size mismatch at index 0. expected 4, actual 8", 0.5, "size", 0
            ),
        ),
    )
    att = attribute(break_trace(), capture)
    advice = advise(att, capture, {"default": mode("default", 0.1)})
    assert [r.compile_id for r in advice.recompiles] == ["0/2"]
    (dynamic,) = [a for a in advice.actions if a.kind == "dynamic"]
    assert dynamic.dims == (0,) and dynamic.compile_s == 0.5 and dynamic.saving_ms is None


def test_one_extra_region_is_never_priced_below_one_break_unprofiled() -> None:
    # The probe timed with and without its break says one break costs 30 µs here. Lookup 4,
    # glue 12 and graph call 7 are kept; the region overhead is raised from 5 to 30 - 23 = 7.
    capture = break_capture()
    trace = dataclasses.replace(break_trace(), probe_break_us=30.0)
    advice = advise(attribute(trace, capture), capture, {"default": mode("default", 0.1)})
    (entry,) = advice.breaks
    assert entry.terms.region_overhead_us == pytest.approx(7.0)
    assert entry.parts.overhead_ms == pytest.approx((4 + 7 + 7 + 12) / 1e3)
    # a cheap break measured unprofiled leaves the profile's prices as they are
    cheap = dataclasses.replace(break_trace(), probe_break_us=10.0)
    (entry,) = advise(attribute(cheap, capture), capture, {"default": mode("default", 0.1)}).breaks
    assert entry.terms.region_overhead_us == pytest.approx(5.0)


def test_fixed_prices_never_exceed_the_compiled_time_measured() -> None:
    # An unprofiled break of 500 µs would charge 500 - 23 µs of region overhead, more than the
    # 54 µs of lookups and compiled regions in the profile: scaled down alike to fit.
    capture = break_capture()
    trace = dataclasses.replace(break_trace(), probe_break_us=500.0)
    advice = advise(attribute(trace, capture), capture, {"default": mode("default", 0.1)})
    (entry,) = advice.breaks
    t = entry.terms
    assert t.overhead_cap == pytest.approx(54.0 / (4 + 477 + 7))
    assert t.fixed_us == pytest.approx(54.0)
    # The ledger of the 100 µs step: the break is its 54 µs of fixed prices plus the 26 µs gap
    # it owns; entry and exit are 10 µs each. Every compiled µs is charged to the break, so
    # none is left as compiled work that stays.
    ledger = advice.ledger
    assert ledger is not None
    assert (ledger.step_ms, ledger.breaks_ms, ledger.other_ms) == pytest.approx((0.1, 0.08, 0.02))
    assert ledger.compiled_ms == pytest.approx(0.0, abs=1e-12)

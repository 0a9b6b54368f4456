"""The cost model, verdicts, taxonomy and recompile advice, on recorded artifacts (no compile)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from advisor.advise import (
    _around_break,
    advise,
    build_cost_model,
    decide,
    estimate,
    finalize_with_what_ifs,
    median_noise_ms,
    recompile_findings,
    recompile_recommendation,
)
from advisor.attribute import attribute
from advisor.capture import Capture
from advisor.model import BreakRecord, LatencyStats, ModeResult, RecompileRecord, WhatIf
from advisor.profile import ProfileTrace
from advisor.taxonomy import category_for, knob_for

DATA = Path(__file__).parent / "data"


def mode(name: str, median_ms: float, iqr_ms: float = 0.0, n: int = 20) -> ModeResult:
    samples = tuple([median_ms] * n)
    return ModeResult(name, "ok", latency=LatencyStats(median_ms, iqr_ms, n, samples))


def load(case: str):  # type: ignore[no-untyped-def]
    capture = Capture.from_json((DATA / f"{case}.capture.json").read_text())
    trace = ProfileTrace.from_json((DATA / f"{case}.trace.json").read_text())
    return capture, trace


@pytest.fixture(scope="module")
def inductor_print():  # type: ignore[no-untyped-def]
    capture, trace = load("inductor_print")
    return capture, attribute(trace, capture, None)


def test_cost_is_region_overhead_plus_gap(inductor_print) -> None:  # type: ignore[no-untyped-def]
    _, att = inductor_print
    default = mode("default", att.call_us / 1e3)
    model = build_cost_model(att, default)
    assert model.region_overhead_us is not None and model.region_overhead_us > 0
    assert model.guard_lookup_us is not None and model.guard_lookup_us >= 0
    assert model.graph_call_us is not None and model.graph_call_us > 0  # the recorded probe
    brk = att.breaks[0]
    assert brk.occurrences_per_call == 1
    costed = estimate(brk, att, model)
    around = _around_break(brk, att, model)  # the regions either side of this break
    expected_us = around.per_break_fixed_us + (brk.gap_ms or 0) * 1e3
    assert costed.cost_ms == pytest.approx(expected_us / 1e3, rel=1e-4)
    assert costed.cost_share == pytest.approx(costed.cost_ms / default.latency.median_ms, rel=1e-4)
    assert "extra region" in costed.why


def test_graph_call_price_comes_from_the_probe_capped_by_the_cheapest_graph_call(
    inductor_print,
) -> None:  # type: ignore[no-untyped-def]
    _, att = inductor_print
    default = mode("default", att.call_us / 1e3)
    cheapest = min(
        value / att.region_count_per_call[cid] for cid, value in att.graph_call_us_per_call.items()
    )
    assert cheapest > 0
    without = build_cost_model(dataclasses.replace(att, graph_call_fixed_us=None), default)
    assert without.graph_call_us is None
    probed = build_cost_model(dataclasses.replace(att, graph_call_fixed_us=cheapest / 2), default)
    assert probed.graph_call_us == pytest.approx(cheapest / 2)
    assert probed.per_break_fixed_us == pytest.approx(without.per_break_fixed_us + cheapest / 2)
    # A probe dearer than one of the workload's own graph calls is bounded by it.
    capped = build_cost_model(dataclasses.replace(att, graph_call_fixed_us=cheapest * 10), default)
    assert capped.graph_call_us == pytest.approx(cheapest)
    costed = estimate(att.breaks[0], dataclasses.replace(att), probed)
    assert "graph call" in (costed.why or "")


def test_verdicts_follow_threshold_and_noise(inductor_print) -> None:  # type: ignore[no-untyped-def]
    _, att = inductor_print
    brk = att.breaks[0]
    cost_ms = estimate(brk, att, build_cost_model(att, mode("default", 1.0))).cost_ms
    assert cost_ms is not None and cost_ms > 0
    # A step 10x the break's cost: 10% share, no noise -> isolate (a print).
    small_step = mode("default", cost_ms * 10)
    advice = advise(att, small_step, ignore_share=0.01)
    assert advice.breaks[0].verdict == "isolate"
    assert advice.breaks[0].category == "print"
    assert "reorderable_logging_functions" in advice.breaks[0].recipe
    # A step 1000x the cost: 0.1% share -> ignore.
    big_step = mode("default", cost_ms * 1000)
    assert advise(att, big_step, ignore_share=0.01).breaks[0].verdict == "ignore"
    # Same step, but so noisy the cost is below the standard error of the median -> ignore.
    noisy = mode("default", cost_ms * 10, iqr_ms=cost_ms * 40, n=20)
    assert median_noise_ms(noisy) > cost_ms
    assert advise(att, noisy, ignore_share=0.01).breaks[0].verdict == "ignore"
    # The threshold is an option: the same report gives the same verdicts.
    assert advise(att, big_step, ignore_share=0.0001).breaks[0].verdict == "isolate"


def test_measured_what_if_overrides_estimate(inductor_print) -> None:  # type: ignore[no-untyped-def]
    _, att = inductor_print
    brk = att.breaks[0]
    cost_ms = estimate(brk, att, build_cost_model(att, mode("default", 1.0))).cost_ms or 0
    step = mode("default", cost_ms * 1000)  # estimate alone says ignore
    advice = advise(att, step)
    assert advice.breaks[0].verdict == "ignore"
    assert advice.knobs and advice.knobs[0][1].setting == "reorderable_logging_functions"
    measured = WhatIf(
        "reorderable_logging_functions={print}",
        "measured",
        True,
        1.0,
        0.5,
        0.5,
        0.01,
        matches_eager=True,
    )
    final = finalize_with_what_ifs(advice, {brk.id: measured}, 0.01)
    assert final[0].verdict == "isolate"
    assert final[0].what_if is not None and final[0].what_if.estimated_saving_ms == pytest.approx(
        advice.breaks[0].cost_ms
    )
    assert "measured what-if saving" in final[0].why
    # A what-if that did not remove the break is not used as evidence.
    useless = dataclasses.replace(measured, removes_break=False)
    kept = finalize_with_what_ifs(advice, {brk.id: useless}, 0.01)[0]
    assert kept.verdict == "ignore"
    assert "does not fix this break" in kept.recipe
    # Nor one whose variant broke somewhere new instead (the saving is the knob's, not the fix's).
    displaced = dataclasses.replace(measured, new_breaks=("GB0170 at model.py:12",))
    assert finalize_with_what_ifs(advice, {brk.id: displaced}, 0.01)[0].verdict == "ignore"


def _brk(
    code: str | None,
    gb_type: str,
    src: str = "",
    explanation: str = "",
    file: str = "/home/u/model.py",
) -> BreakRecord:
    return BreakRecord("B1", code, gb_type, file, 10, src, "forward", explanation)


@pytest.mark.parametrize(
    ("brk", "category", "action"),
    [
        (
            _brk(
                "GB0059",
                "Failed to trace builtin operator",
                'print("x")',
                "builtin operator `print`",
            ),
            "print",
            "isolate",
        ),
        (
            _brk("GB0059", "Failed to trace builtin operator", "len(x)", "operator `len`"),
            "other",
            "rewrite",
        ),
        (
            _brk("GB0170", "Data-dependent branching", "if x.sum() > 0:"),
            "data_dependent_branch",
            "rewrite",
        ),
        (
            _brk(None, "generic_jump TensorVariable()", "if x.sum() > 0:"),
            "data_dependent_branch",
            "rewrite",
        ),
        (
            _brk(
                "GB0124",
                "Unsupported Tensor.item() call with capture_scalar_outputs=False",
                "n = x.item()",
            ),
            "scalar_extraction",
            "rewrite",
        ),
        (_brk("GB0033", "Data dependent operator", "x.tolist()"), "scalar_extraction", "rewrite"),
        (_brk("GB0036", "Dynamic shape operator", "idx = m.nonzero()"), "dynamic_shape", "rewrite"),
        (
            _brk("GB0098", "Skip calling `torch.compiler.disable()`d function", "helper(x)"),
            "disabled",
            "isolate",
        ),
        (
            _brk(
                "GB0291",
                "logging.Logger method not supported for non-export cases",
                'LOG.warning("x")',
            ),
            "logging",
            "isolate",
        ),
        (
            _brk(
                "GB6215",
                "Unresolved GetAttrVariable comparison",
                "log = logging.getLogger()",
                file="/usr/lib/python3.11/logging/__init__.py",
            ),
            "logging",
            "isolate",
        ),
        (
            _brk(
                "GB0231",
                "call `torch.from_numpy` with `torch._dynamo.config.trace_numpy=False`",
                "torch.from_numpy(a)",
            ),
            "numpy",
            "rewrite",
        ),
        (
            _brk("GB0007", "Attempted to call function marked as skipped", "scipy.special.erf(a)"),
            "third_party",
            "isolate",
        ),
        (
            _brk(
                "GB9999",
                "A code from the future",
                "weird(x)",
                file="/venv/lib/python3.11/site-packages/lib/x.py",
            ),
            "third_party",
            "isolate",
        ),
        (_brk("GB9999", "A code from the future", "np.fft.fft(a)"), "numpy", "rewrite"),
        (
            _brk("GB0025", "Call to `torch._dynamo.graph_break()`", "torch._dynamo.graph_break()"),
            "explicit",
            "rewrite",
        ),
    ],
)
def test_taxonomy(brk: BreakRecord, category: str, action: str) -> None:
    cat = category_for(brk)
    assert (cat.key, cat.action) == (category, action)


def test_knobs() -> None:
    item = _brk("GB0124", "Unsupported Tensor.item() call", "n = x.item()")
    knob = knob_for(item, category_for(item))
    assert knob is not None and knob.setting == "capture_scalar_outputs"
    log = _brk("GB0291", "logging.Logger method", 'logger.warning("slow")')
    log_knob = knob_for(log, category_for(log))
    assert log_knob is not None and log_knob.value_spec == "logger:warning"
    assert log_knob.behaviour_note is not None
    branch = _brk("GB0170", "Data-dependent branching", "if x > 0:")
    assert knob_for(branch, category_for(branch)) is None


def test_unknown_code_falls_back_to_registry_hints() -> None:
    brk = dataclasses.replace(
        _brk("GB9999", "A code from the future", "frob(x)"), hints=("Use torch.frob instead.",)
    )
    model = build_cost_model.__wrapped__ if hasattr(build_cost_model, "__wrapped__") else None
    assert model is None
    from advisor.advise import CostModel

    decided = decide(
        dataclasses.replace(brk, cost_ms=1.0),
        CostModel(1.0, 0.0, 1.0, 2.0, 0.0),
        0.01,
    )
    assert decided.verdict == "rewrite"
    assert "Use torch.frob instead." in decided.recipe
    assert decided.doc_url is not None and decided.doc_url.endswith("gb9999.html")


@pytest.mark.parametrize(
    ("reason", "advice"),
    [
        ("0/1: tensor 'x' size mismatch at index 1. expected 16, actual 32", "mark_dynamic"),
        ("0/1: tensor 'x' dtype mismatch. expected Float, actual Double", "dtype"),
        ("0/1: tensor 'x' rank mismatch. expected 2, actual 3", "rank"),
        ("0/0: k == 2  # return (x * k).sin()", "Python value"),
        ("0/1: something else entirely", "fix the failing guard"),
    ],
)
def test_recompile_recommendations(reason: str, advice: str) -> None:
    assert advice in recompile_recommendation(reason)


def test_backend_switches_are_not_findings() -> None:
    records = (
        RecompileRecord("0/1", "f", "0/0: BACKEND_MATCH failure: ..."),
        RecompileRecord("0/2", "f", "size mismatch at index 0. expected 4, actual 8", 0.5),
    )
    findings = recompile_findings(records)
    assert [r.compile_id for r in findings] == ["0/2"]
    assert "mark_dynamic" in findings[0].recommendation


def test_extra_regions_count_the_split_caller_and_helper() -> None:
    from advisor.advise import extra_regions

    # A helper that breaks, called three times: each call splits the caller (a resume region)
    # and runs the helper as its own frame, so more regions go than there are occurrences.
    capture, trace = load("helper_thrice")
    att = attribute(trace, capture, None)
    (brk,) = att.breaks
    total = sum(att.region_count_per_call.values())
    assert brk.occurrences_per_call == 3.0
    assert extra_regions(att, brk, att.breaks) == pytest.approx(total - 1)
    assert total - 1 > 3
    # One plain break: one extra region.
    capture, trace = load("inductor_print")
    att = attribute(trace, capture, None)
    assert extra_regions(att, att.breaks[0], att.breaks) == pytest.approx(1.0)
    # Two breaks in a row share the extra regions by the regions ending in each.
    capture, trace = load("double")
    att = attribute(trace, capture, None)
    shares = [extra_regions(att, b, att.breaks) for b in att.breaks]
    assert sum(shares) == pytest.approx(sum(att.region_count_per_call.values()) - 1)


def test_extra_graph_calls_leave_out_regions_with_an_empty_graph() -> None:
    from advisor.advise import extra_graph_calls, extra_regions

    def graph_regions(att) -> float:  # type: ignore[no-untyped-def]
        return sum(att.graph_region_count_per_call.values())

    # Two breaks in a row: the region between them has no graph. Three regions, two graph
    # calls: two extra regions to enter, one extra graph call.
    capture, trace = load("double")
    att = attribute(trace, capture, None)
    assert graph_regions(att) == sum(att.region_count_per_call.values()) - 1
    regions = [extra_regions(att, b, att.breaks) for b in att.breaks]
    graphs = [extra_graph_calls(att, b, att.breaks) for b in att.breaks]
    assert sum(graphs) == pytest.approx(graph_regions(att) - 1)
    assert all(g <= r for g, r in zip(graphs, regions, strict=True))
    # A break before any op: the first region is empty, so removing the break removes a region
    # (and its guard lookup) but no graph call.
    capture, trace = load("start")
    att = attribute(trace, capture, None)
    assert extra_regions(att, att.breaks[0], att.breaks) == pytest.approx(1.0)
    assert extra_graph_calls(att, att.breaks[0], att.breaks) == pytest.approx(0.0)
    model = _around_break(att.breaks[0], att, build_cost_model(att, mode("default", 1.0)))
    costed = estimate(att.breaks[0], att, model, att.breaks)
    expected_us = (model.guard_lookup_us or 0.0) + (att.breaks[0].gap_ms or 0.0) * 1e3
    assert costed.cost_ms == pytest.approx(expected_us / 1e3, rel=1e-4)


def test_compute_bound_gap_work_is_not_counted_as_saved(inductor_print) -> None:  # type: ignore[no-untyped-def]
    _, att = inductor_print
    brk = att.breaks[0]
    gap_us = (brk.gap_ms or 0.0) * 1e3
    model = build_cost_model(att, mode("default", att.call_us / 1e3))
    base = estimate(brk, att, model)
    heavy = dataclasses.replace(
        att,
        gap_work_us_per_call={brk.id: gap_us / 2},
        gap_kept_us_per_call={brk.id: gap_us / 4},
    )
    costed = estimate(brk, heavy, model)
    assert costed.cost_ms == pytest.approx((base.cost_ms or 0) - gap_us / 4 / 1e3, rel=1e-3)
    assert "compute-bound" in (costed.why or "")
    # never more than the gap's measured tensor work
    capped = dataclasses.replace(heavy, gap_kept_us_per_call={brk.id: gap_us * 10})
    assert estimate(brk, capped, model).cost_ms == pytest.approx(
        (base.cost_ms or 0) - gap_us / 2 / 1e3, rel=1e-3
    )


def test_skipped_frame_wording_follows_the_cause() -> None:
    from advisor.taxonomy import recipe_for, skipped_frame_note

    plain = BreakRecord(
        id="B1", gb_code="GB0014", gb_type="t", file="f.py", line=1, function="inner"
    )
    assert skipped_frame_note(plain) is None
    loop = dataclasses.replace(plain, frame_skipped=True, skip_code="GB7000")
    whole = dataclasses.replace(plain, frame_skipped=True)
    assert "inside a loop" in (skipped_frame_note(loop) or "")
    assert "could not compile any part" in (skipped_frame_note(whole) or "")
    assert "loop" not in recipe_for(whole, category_for(whole), "f.py:1").split("\n")[0]
    assert "inside a loop" in recipe_for(loop, category_for(loop), "f.py:1")


def test_break_inside_library_code_is_isolated_not_rewritten(inductor_print) -> None:  # type: ignore[no-untyped-def]
    from advisor.taxonomy import library_location, recipe_for

    _, att = inductor_print
    torch_file = "/venv/lib/python3.11/site-packages/torch/optim/optimizer.py"
    # the user's line calls into torch, and torch's own graph_break() stops Dynamo
    reached = dataclasses.replace(
        att.breaks[0],
        gb_code="GB0025",
        gb_type="Call to `torch._dynamo.graph_break()`",
        code="opt.step()",
        break_file=torch_file,
        break_line=79,
    )
    assert library_location(reached) == (torch_file, 79)
    text = recipe_for(reached, category_for(reached), "train.py:63", f"{torch_file}:79")
    assert "inside library code" in text and "reached from train.py:63 (`opt.step()`)" in text
    assert "Remove the explicit" not in text  # not the user's graph_break() to remove
    model = build_cost_model(att, mode("default", att.call_us / 1e3))
    verdicts = decide(estimate(reached, att, model), model, ignore_share=0.0)
    assert verdicts.verdict == "isolate"
    # no user frame at all inside the compiled function: the reported line is the library's
    inside = dataclasses.replace(reached, file=torch_file, line=79, break_file=None)
    assert library_location(inside) == (torch_file, 79)
    assert "reached from" not in recipe_for(inside, category_for(inside), "x", "y")
    # the user's own code is not library code
    assert library_location(att.breaks[0]) is None


def test_break_saves_the_fixed_costs_of_the_lighter_side(inductor_print) -> None:  # type: ignore[no-untyped-def]
    # A small check region before the break, the whole model after it: merging them saves a
    # small region's fixed part, not the model region's per-parameter guards and wrappers.
    _, att = inductor_print
    brk = att.breaks[0]
    (before,) = brk.compile_ids
    (after,) = att.resume_regions[brk.id]
    model = build_cost_model(att, mode("default", 1.0))
    lopsided = dataclasses.replace(
        att,
        region_fixed_us={before: 10.0, after: 500.0},
        guard_lookup_us_by_region={before: 2.0, after: 80.0},
    )
    around = _around_break(brk, lopsided, model)
    assert (around.region_overhead_us, around.guard_lookup_us) == (10.0, 2.0)
    # where the resume region is unknown, the workload-wide values stand
    unknown = dataclasses.replace(lopsided, resume_regions={})
    around = _around_break(brk, unknown, model)
    assert around.region_overhead_us == model.region_overhead_us
    assert around.guard_lookup_us == model.guard_lookup_us

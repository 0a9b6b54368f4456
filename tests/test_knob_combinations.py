"""Knobs set together (#59): which combinations are planned from the captured breaks, the arm
that sets them all, what it measures on a solver loop whose breaks each knob alone cannot
remove, and the refusals (a combination that fails or changes the result is no action).
Capture and measurement run on the eager backend: the logic is Dynamo's, not Inductor's."""

from __future__ import annotations

import pytest

from advisor.core.model import BreakSite
from advisor.core.taxonomy import (
    KNOB_JOIN,
    MAX_PAIRED_KNOBS,
    Knob,
    combined,
    data_dependent_knobs,
    knob_combinations,
    knob_for,
)
from advisor.measure import harness
from advisor.measure.stages import WhatIfPlan, measure_what_if, variant_for, what_if_plan
from advisor.measure.workload import load_target
from advisor.render.formatting import knob_code
from tests.support.eager_capture import QUICK, captured_sites, eager_backend  # noqa: F401
from tests.test_advise import run_advise, site, what_if

TARGET = "tests/targets/knob_pair.py:workload"
SETTINGS = QUICK
SCALAR, DYNAMIC = data_dependent_knobs()


def scalar_site(site_id: str = "B1", **kw) -> BreakSite:  # type: ignore[no-untyped-def]
    return site(
        site_id,
        code="scale = error.item()",
        gb_code="GB0124",
        gb_type="Unsupported Tensor.item() call with capture_scalar_outputs=False",
        **kw,
    )


def dynamic_site(site_id: str = "B2") -> BreakSite:
    return site(
        site_id,
        code="idx = torch.nonzero(mask)",
        gb_code="GB0036",
        gb_type="Dynamic shape operator",
    )


def knob_plans(sites: tuple[BreakSite, ...]) -> list[WhatIfPlan]:
    return [p for p in what_if_plan(sites) if p.kind == "knob"]


def test_the_sites_classify_to_the_two_data_dependent_knobs() -> None:
    assert knob_for(scalar_site()) == SCALAR and knob_for(dynamic_site()) == DYNAMIC


@pytest.mark.parametrize(("count", "combos"), [(1, 0), (2, 1), (3, 4), (4, 7), (5, 1)])
def test_every_pair_and_all_together_up_to_four_knobs(count: int, combos: int) -> None:
    knobs = [Knob(f"k{i}=True", f"k{i}", "true", "rewrite") for i in range(count)]
    planned, skipped = knob_combinations(knobs)
    assert len(planned) == combos
    assert all(len(set(c)) == len(c) >= 2 for c in planned)
    # past four knobs the pairs are skipped, and the plan says why
    assert (skipped is not None) == (count > MAX_PAIRED_KNOBS)
    if count > 2:
        assert tuple(knobs) in planned


def test_settings_and_combinations_are_not_combined_again() -> None:
    setting = Knob("compiled_autograd=True", "compiled_autograd", "true", "isolate", kind="setting")
    pair = combined((SCALAR, DYNAMIC))
    assert knob_combinations([SCALAR, setting]) == ([], None)
    assert knob_combinations([pair, SCALAR]) == ([], None)


def test_a_combination_names_its_parts_and_renders_each_as_code() -> None:
    pair = combined((SCALAR, DYNAMIC))
    assert pair.knobs == (SCALAR, DYNAMIC) and SCALAR.knobs == (SCALAR,)
    assert pair.name == f"{SCALAR.name}{KNOB_JOIN}{DYNAMIC.name}"
    assert knob_code(pair.name) == f"`{SCALAR.name}` and `{DYNAMIC.name}`"


def test_two_captured_knobs_are_planned_alone_and_together() -> None:
    plans = knob_plans((scalar_site(), dynamic_site()))
    assert [p.knob.name for p in plans if p.knob] == [
        SCALAR.name,
        DYNAMIC.name,
        combined((SCALAR, DYNAMIC)).name,
    ]
    assert {t.id for t in plans[-1].targets} == {"B1", "B2"}


def test_a_data_dependent_break_in_a_skipped_loop_gets_the_other_knob_with_it() -> None:
    # the loop's frame ran eagerly from the first break on: what follows was never captured
    in_loop = scalar_site(skip_code="GB7000")
    plans = knob_plans((in_loop,))
    assert [p.knob.name for p in plans if p.knob] == [SCALAR.name, combined((SCALAR, DYNAMIC)).name]
    assert [t.id for t in plans[-1].targets] == ["B1"]
    # straight-line code: every later break was captured, nothing is added
    assert [p.knob.name for p in knob_plans((scalar_site(),)) if p.knob] == [SCALAR.name]


def test_a_print_alone_plans_no_combination() -> None:
    assert len(knob_plans((site(),))) == 1


def test_the_combined_arm_sets_every_knob_while_it_compiles() -> None:
    import torch._dynamo.config as dynamo_config

    plan = WhatIfPlan("knob", (scalar_site(),), knob=combined((SCALAR, DYNAMIC)))
    variant = variant_for(load_target(TARGET, "cpu"), plan, plan.targets)
    assert variant is not None
    before = (dynamo_config.capture_scalar_outputs, dynamo_config.capture_dynamic_output_shape_ops)
    with variant.compiling():
        assert dynamo_config.capture_scalar_outputs is True
        assert dynamo_config.capture_dynamic_output_shape_ops is True
    after = (dynamo_config.capture_scalar_outputs, dynamo_config.capture_dynamic_output_shape_ops)
    assert after == before


@pytest.mark.usefixtures("eager_backend")
def test_on_the_solver_loop_only_the_pair_removes_the_break() -> None:
    workload = load_target(TARGET, "cpu")
    sites = captured_sites(TARGET)
    assert [s.gb_code for s in sites] == ["GB0124"] and sites[0].frame_skipped
    plans = {p.knob.name: p for p in knob_plans(sites) if p.knob}
    pair = combined((SCALAR, DYNAMIC)).name
    assert set(plans) == {SCALAR.name, pair}
    reference = harness.eager_reference(workload, [])
    alone = measure_what_if(workload, plans[SCALAR.name], reference, SETTINGS, "cpu", sites)
    together = measure_what_if(workload, plans[pair], reference, SETTINGS, "cpu", sites)
    # the scalar knob alone meets the nonzero next: the break moves, the loop stays eager
    assert alone.status == "measured" and alone.new_breaks, alone
    assert together.status == "measured", together.error
    assert together.removed == (sites[0].id,) and not together.new_breaks
    assert together.output is not None and together.output.matches
    assert together.knob == pair and together.kind == "knob"


def test_a_measured_combination_is_one_action_setting_both() -> None:
    pair = combined((SCALAR, DYNAMIC))
    w = what_if(knob=pair.name, setting=pair.setting, fix=pair.fix, kind="knob")
    (action,) = [a for a in run_advise(scalar_site(), what_ifs=[w]).actions if a.kind == "knob"]
    assert action.knob == pair.name and action.measured and action.breaks == ("B1",)


@pytest.mark.parametrize(
    "refused",
    [
        {"status": "failed", "error": "AttributeError: torch._dynamo.config has no 'k'"},
        {"matches_eager": False},
    ],
)
def test_a_combination_that_fails_or_changes_the_result_is_no_action(refused: dict) -> None:  # type: ignore[type-arg]
    pair = combined((SCALAR, DYNAMIC))
    w = what_if(knob=pair.name, setting=pair.setting, fix=pair.fix, kind="knob", **refused)
    actions = run_advise(scalar_site(), what_ifs=[w]).actions
    assert not [a for a in actions if a.kind == "knob" and a.measurable]


@pytest.mark.usefixtures("eager_backend")
def test_a_combination_whose_setting_torch_lacks_is_a_failed_record() -> None:
    bogus = Knob("no_such_knob=True", "no_such_knob", "true", "rewrite")
    plan = WhatIfPlan("knob", (scalar_site(),), knob=combined((SCALAR, bogus)))
    workload = load_target(TARGET, "cpu")
    reference = harness.eager_reference(workload, [])
    w = measure_what_if(workload, plan, reference, SETTINGS, "cpu", ())
    assert w.status == "failed" and "no_such_knob" in (w.error or "")

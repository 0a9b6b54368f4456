"""Training placements (`advisor.measure.training_variants`): planned for every training step by
its form, breaks or not; each measured on the full step (forward, backward, optimizer); judged
as actions with the calls after which their extra compile pays; a variant that fails on the step
reads "breaks training". Compiles use the eager backend (placement, not Inductor, is tested)."""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from typing import Any

import pytest
import torch
from torch import nn

from advisor.core.model import (
    TRAINING_PLACEMENTS,
    CodeUnit,
    Location,
    Replication,
    Settings,
    TrainingStep,
    WhatIf,
)
from advisor.judge.advise import Advice
from advisor.measure import placement, torch_adapter
from advisor.measure.harness import eager_reference
from advisor.measure.stages import what_if_plan
from advisor.measure.training_variants import (
    MODULE_FORM,
    STEP_FORM,
    OptimizerUpdate,
    foreach_only,
    fused_supported,
    planned_kinds,
    training_step,
    training_variant,
)
from advisor.measure.whatif import measure_variant
from advisor.measure.workload import Workload
from advisor.render import prose
from advisor.render.actions import action_title
from advisor.render.view import displayer
from tests.support.reports import full_report
from tests.test_advise import mode, run_advise, what_if

SETTINGS = Settings(warmup=1, repeats=3, budget_s=1.0, min_block_s=1e-3, target_ci=0.0)


@pytest.fixture(autouse=True)
def eager_backend(monkeypatch: pytest.MonkeyPatch) -> Any:
    torch_adapter.reset_dynamo()
    monkeypatch.setattr(
        torch_adapter,
        "compile_mode",
        lambda fn, _backend, fullgraph: torch.compile(fn, backend="eager", fullgraph=fullgraph),
    )
    yield
    torch_adapter.reset_dynamo()


def train_step(module_compiled: bool) -> Workload:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(4, 8), torch.randn(4, 1)

    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    return Workload(step, (x, y), name="train", compiled_module=model if module_compiled else None)


def test_a_training_step_is_found_by_its_optimizer_and_its_form() -> None:
    found = training_step(train_step(module_compiled=True))
    assert found == TrainingStep(optimizers=("opt",), module_compiled=True, modules=("model",))
    assert training_step(train_step(module_compiled=False)).module_compiled is False  # type: ignore[union-attr]
    model = nn.Linear(2, 2)
    assert training_step(Workload(model, (torch.randn(1, 2),))) is None


def test_each_form_gets_its_placements_breaks_or_not() -> None:
    module_form = TrainingStep(("opt",), module_compiled=True)
    step_form = TrainingStep(("opt",), module_compiled=False)
    assert planned_kinds(module_form) == ("optimizer", "step", "fused", "foreach", "eager_fused")
    # breaks or not ("module" is `model.compile()`, breaks and all; "regional" its clean parts)
    assert planned_kinds(step_form) == ("module", "eager_fused")
    assert planned_kinds(None) == ()
    # the two forms' placements are the kinds every stage knows as training placements
    assert set(MODULE_FORM + STEP_FORM) == set(TRAINING_PLACEMENTS)
    plans = what_if_plan((), training=module_form)
    assert [(p.kind, p.targets) for p in plans] == [(k, ()) for k in MODULE_FORM]
    assert what_if_plan(()) == []
    # under DDP the ranks compile in lockstep: the DDP knob alone
    assert [p.kind for p in what_if_plan((), ddp=True, training=module_form)] == ["knob"]


@pytest.mark.parametrize(
    ("module_compiled", "kind", "subjects"),
    [
        (True, "optimizer", ["opt.step"]),
        (True, "step", []),
        (True, "fused", ["opt"]),
        (True, "eager_fused", ["opt"]),
        (False, "module", ["model"]),
        (False, "eager_fused", ["opt"]),
    ],
)
def test_each_placement_runs_the_full_step(
    module_compiled: bool, kind: str, subjects: list[str]
) -> None:
    workload = train_step(module_compiled)
    variant = training_variant(kind, workload, [])
    assert variant is not None
    assert [u.path for u in variant.record.subjects] == subjects
    reference = eager_reference(workload, [])
    w = measure_variant(workload, variant, [], reference, SETTINGS, "cpu")
    assert (w.status, w.kind, w.knob) == ("measured", kind, f"placement:{kind}"), w.error
    assert w.saving_ci_ms is not None and w.rounds >= 3


def test_a_placement_of_the_other_form_does_not_apply() -> None:
    assert training_variant("module", train_step(module_compiled=True), []) is None
    assert training_variant("optimizer", train_step(module_compiled=False), []) is None
    model = nn.Linear(2, 2)
    assert training_variant("optimizer", Workload(model, (torch.randn(1, 2),)), []) is None


def advice_placed(kind: str) -> Advice:
    """The advice of a run whose default step is 0.1 ms (its workers' compile and first
    call 2 s) and where placement `kind` saves 0.04 ms per call, its workers' first call 5 s."""
    rep = Replication(processes=4, rounds=5, first_call_s=(5.0,) * 4)
    placed = what_if(
        knob=f"placement:{kind}", setting=kind, fix="placement", kind=kind,
        targets=(), removed=(), variant_ms=0.06, saving_ms=0.04, saving_ci_ms=(0.035, 0.045),
        replication=rep,
    )  # fmt: skip
    default = dataclasses.replace(mode("default", 0.1), first_call_s=2.0)
    return run_advise(what_ifs=[placed], default=default)


def test_an_optimizer_placement_that_saves_leads_with_when_it_pays() -> None:
    # compiling opt.step adds 5 - 2 = 3 s of compile: it pays after 3 / 0.04e-3 = 75,000 calls
    advice = advice_placed("optimizer")
    first = advice.actions[0]
    assert first.kind == "optimizer" and first.break_even_calls == pytest.approx(75_000)
    report = dataclasses.replace(full_report(), actions=advice.actions, ledger=advice.ledger)
    title = action_title(first, report, displayer(report))
    assert "`opt.step = torch.compile(opt.step)`" in title
    assert "pays for itself after 75,000 calls" in title


def test_a_fused_optimizer_has_no_break_even_however_long_its_first_call() -> None:
    # fused=True compiles nothing more than the default mode: its workers' longer first call
    # is the machine's noise, not a compile that a saving pays back
    first = advice_placed("fused").actions[0]
    assert first.kind == "fused" and first.break_even_calls is None


def test_a_variant_that_fails_on_a_training_step_breaks_training() -> None:
    failed = WhatIf(
        "capture_dynamic_output_shape_ops=True", "capture_dynamic_output_shape_ops", "rewrite",
        "failed", ("B1",), error="GuardOnDataDependentSymNode: Could not guard on u7",
    )  # fmt: skip
    placed = WhatIf("placement:optimizer", "optimizer", "placement", "measured", kind="optimizer",
                    baseline_ms=1.0, variant_ms=0.9, saving_ms=0.1, saving_ci_ms=(0.05, 0.15),
                    new_breaks=(Location("/x/adam.py", 3, "adam"),))  # fmt: skip
    assert "a placement for the whole step, no break targeted; 1 break(s) in what it compiles" in (
        prose.what_if_line(placed, training=True)
    )
    line = prose.what_if_line(failed, training=True)
    assert line.endswith(": breaks training: GuardOnDataDependentSymNode: Could not guard on u7")
    assert ": failed: " in prose.what_if_line(failed)


def test_the_fused_optimizer_is_tried_where_a_fused_kernel_exists() -> None:
    workload = train_step(module_compiled=True)
    (opt,) = placement.optimizers_held(workload).values()
    assert fused_supported(opt)
    groups = [dict(g) for g in opt.param_groups]
    with OptimizerUpdate([opt]):
        assert all(g["fused"] is True and g["foreach"] is False for g in opt.param_groups)
        workload()  # the fused kernel runs this step
    assert [dict(g) for g in opt.param_groups] == groups  # put back as built
    assert not fused_supported(torch.optim.RMSprop(nn.Linear(2, 2).parameters()))  # no `fused`
    already = torch.optim.Adam(nn.Linear(2, 2).parameters(), fused=True)
    assert not fused_supported(already)
    rms = Workload(lambda: None, (), compiled_module=nn.Linear(2, 2))
    assert _fused_for(rms, torch.optim.RMSprop) is None


def _fused_for(workload: Workload, optimizer_class: type, kind: str = "fused") -> Any:
    opt = optimizer_class(workload.compiled_module.parameters())

    def step() -> None:
        opt.step()

    return training_variant(kind, replace(workload, fn=step), [])


def test_foreach_is_tried_only_where_no_fused_kernel_exists() -> None:
    # AdamW has a fused kernel here: fused is measured, foreach (the same update in more
    # passes) is not; RMSprop has none: foreach is measured, fused and eager_fused are not
    adamw = Workload(lambda: None, (), compiled_module=nn.Linear(2, 2))
    assert _fused_for(adamw, torch.optim.AdamW, "foreach") is None
    assert _fused_for(adamw, torch.optim.AdamW, "eager_fused") is not None
    rms = Workload(lambda: None, (), compiled_module=nn.Linear(2, 2))
    assert _fused_for(rms, torch.optim.RMSprop, "eager_fused") is None
    assert foreach_only(torch.optim.RMSprop(nn.Linear(2, 2).parameters()))
    assert not foreach_only(torch.optim.RMSprop(nn.Linear(2, 2).parameters(), foreach=True))
    variant = _fused_for(rms, torch.optim.RMSprop, "foreach")
    assert variant is not None and [u.path for u in variant.record.subjects] == ["opt"]


def test_the_foreach_update_is_switched_in_and_put_back() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 4)
    opt = torch.optim.RMSprop(model.parameters())
    groups = [dict(g) for g in opt.param_groups]
    with OptimizerUpdate([opt], "foreach"):
        assert all(g["foreach"] is True and "fused" not in g for g in opt.param_groups)
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
    assert [dict(g) for g in opt.param_groups] == groups


def test_the_foreach_and_eager_fused_titles_say_what_to_write() -> None:
    report = full_report()
    for kind, start in (
        ("foreach", "Build `opt` with `foreach=True`"),
        ("eager_fused", "Do not compile `"),
    ):
        placed = what_if(
            knob=f"placement:{kind}", setting=kind, fix="placement", kind=kind, targets=(),
            removed=(), variant_ms=0.06, saving_ms=0.04, saving_ci_ms=(0.035, 0.045),
            subjects=(CodeUnit("opt", "AdamW"),),
            replication=Replication(processes=4, rounds=5, first_call_s=(9.0,) * 4),
        )  # fmt: skip
        advice = run_advise(what_ifs=[placed], default=mode("default", 0.1))
        first = advice.actions[0]
        assert first.kind == kind and first.break_even_calls is None  # it adds no compile
        shown = dataclasses.replace(report, actions=advice.actions, ledger=advice.ledger)
        title = action_title(first, shown, displayer(shown))
        assert title.startswith(start), title
        assert "`fused=True`" in title or kind == "foreach"


def test_a_fused_optimizer_title_names_the_optimizer_and_the_argument() -> None:
    placed = what_if(
        knob="placement:fused", setting="fused", fix="placement", kind="fused", targets=(),
        removed=(), variant_ms=0.06, saving_ms=0.04, saving_ci_ms=(0.035, 0.045),
        subjects=(CodeUnit("opt", "AdamW"),),
        replication=Replication(processes=4, rounds=5, first_call_s=(2.0,) * 4),
    )  # fmt: skip
    default = dataclasses.replace(mode("default", 0.1), first_call_s=2.0)
    advice = run_advise(what_ifs=[placed], default=default)
    first = advice.actions[0]
    assert first.kind == "fused"
    report = dataclasses.replace(full_report(), actions=advice.actions, ledger=advice.ledger)
    title = action_title(first, report, displayer(report))
    assert title.startswith("Build `opt` with `fused=True`")
    assert "pays for itself" not in title  # it adds no compile
    # a report judged before fused was known to compile nothing held a break-even: not shown
    stale = dataclasses.replace(first, break_even_calls=703.0)
    assert "pays for itself" not in action_title(stale, report, displayer(report))

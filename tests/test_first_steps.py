"""A training step's arms are checked by their first steps (`advisor.measure.first_steps`): each
worker starts from the model as built, reports its first two outputs, and the parent compares
them with eager's. Compiles use the eager backend: what is checked is the bookkeeping, not
Inductor's numerics."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from torch import nn

from advisor.core.model import Note, OutputCheck, Settings, WhatIf
from advisor.measure import arms, placement, torch_adapter
from advisor.measure.arms import ArmTask, Built, mode_arm, what_if_arm
from advisor.measure.first_steps import (
    arm_checks,
    compare_steps,
    with_mode_check,
    with_what_if_check,
)
from advisor.measure.stages import WhatIfPlan
from advisor.measure.torch_adapter import LeafPrint, output_fingerprint, training_state_kept
from advisor.measure.workload import Workload
from advisor.render import prose
from advisor.render.notes import note_text
from tests.test_advise import mode

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


def loss(value: float) -> tuple[LeafPrint, ...]:
    return (LeafPrint("float32", 1, (value,), whole=True),)


def built(*losses: float) -> Built:
    return Built("train", first_steps=tuple(loss(v) for v in losses))


def test_rounding_matches_and_a_different_loss_does_not() -> None:
    same = compare_steps((loss(2.0), loss(1.9)), (loss(2.0 + 1e-6), loss(1.9 - 1e-6)))
    assert same.matches and same.comparable and same.max_abs_diff == pytest.approx(1e-6)
    other = compare_steps((loss(2.0), loss(1.9)), (loss(2.0), loss(1.7)))
    assert not other.matches and other.comparable and other.max_abs_diff == pytest.approx(0.2)
    shape = compare_steps((loss(2.0),), (loss(2.0), loss(1.9)))
    assert not shape.matches and not shape.comparable


def test_a_summarised_leaf_scales_its_tolerance_with_its_elements() -> None:
    # 1000 elements of ~1: their sum gathers 1000 roundings; the largest magnitude does not
    big = (LeafPrint("float32", 1000, (500.0, 1000.0, 1.0), whole=False),)
    near = (LeafPrint("float32", 1000, (500.05, 1000.05, 1.0), whole=False),)
    far = (LeafPrint("float32", 1000, (500.0, 1000.0, 1.01), whole=False),)
    assert compare_steps((big,), (near,)).matches
    assert not compare_steps((big,), (far,)).matches


def test_integers_compare_exactly_and_nan_only_with_nan() -> None:
    count = (LeafPrint("int64", 1, (3.0,), whole=True),)
    assert not compare_steps((count,), ((LeafPrint("int64", 1, (4.0,), whole=True),),)).matches
    nan = loss(math.nan)
    assert compare_steps((nan,), (nan,)).matches
    check = compare_steps((nan,), (loss(1.0),))
    assert not check.matches and not check.comparable


def test_arms_are_checked_against_eager_unless_eager_disagrees_with_itself() -> None:
    builds = {
        "eager": [built(2.0, 1.8), built(2.0, 1.8)],
        "default": [built(2.0, 1.8 + 1e-6), built(2.0, 1.8)],
        "what-if late": [built(2.0, 1.8), built(2.0, 1.5)],  # its second process diverges
    }
    checks, note = arm_checks(builds)
    assert note.kind == "first_steps_compared" and set(checks) == {"default", "what-if late"}
    assert checks["default"].matches
    assert not checks["what-if late"].matches
    assert checks["what-if late"].max_abs_diff == pytest.approx(0.3)
    unseeded = {**builds, "eager": [built(2.0, 1.8), built(2.3, 2.1)]}
    checks, note = arm_checks(unseeded)
    assert checks == {} and note.kind == "first_steps_unseeded"
    assert "without a fixed seed" in note_text(note)
    checks, note = arm_checks({"default": [built(2.0, 1.8)]})
    assert checks == {} and note.kind == "first_steps_not_compared"


def test_a_diverging_variant_breaks_training_and_is_no_saving() -> None:
    default_check = OutputCheck(True, 1e-7)
    diverged = OutputCheck(False, 0.3, comparable=True)
    w = WhatIf(
        "placement:optimizer", "optimizer", "placement", "measured", kind="optimizer",
        baseline_ms=10.0, variant_ms=8.0, saving_ms=2.0, saving_ci_ms=(1.5, 2.5),
    )  # fmt: skip
    checked = with_what_if_check(w, diverged, default_check)
    assert checked.matches_eager is False and checked.baseline_output == default_check
    line = prose.what_if_line(checked, training=True)
    assert ": breaks training: its first steps differ from eager's" in line
    assert "max |Δ| 0.3" in line and "not counted as a saving" in line
    ok = prose.what_if_line(with_what_if_check(w, OutputCheck(True, 1e-7), default_check), True)
    assert "first steps match eager: yes" in ok
    compiled = with_mode_check(mode("default", 10.0), OutputCheck(True, 2e-7))
    assert compiled.matches_eager is True and compiled.max_abs_diff == pytest.approx(2e-7)
    assert with_mode_check(mode("eager", 12.0), diverged).output is None  # eager is the reference


class Rescaled(nn.Module):
    """A module whose `.item()` breaks the graph: the model is no single region."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / (1.0 + x.abs().mean().item())


class Block(nn.Module):
    """A break-free module: the regional placement's region."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.1), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def train_step() -> Workload:
    torch.manual_seed(0)
    model = nn.Sequential(Block(), Rescaled(), nn.Linear(16, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x, y = torch.randn(4, 8), torch.randn(4, 1)

    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    return Workload(step, (x, y), name="train", compiled_module=model)


def test_looking_at_a_training_step_leaves_it_as_built() -> None:
    fresh = [output_fingerprint(train_step()())]
    workload = train_step()
    optimizers = list(placement.optimizers_held(workload).values())
    assert len(optimizers) == 1
    with training_state_kept([workload.compiled_module], optimizers):
        for _ in range(3):
            workload()  # updates the weights, the optimizer's moments, draws dropout masks
    assert [output_fingerprint(workload())] == fresh


def worker(arm: arms.Arm) -> Built:
    task = ArmTask(arm, "t.py:f", "{}", "cpu", SETTINGS, training=True, number=1, memory=False)
    return arms.build(task, train_step()).built


def test_each_arm_reports_its_first_steps_from_the_model_as_built() -> None:
    eager, default = worker(mode_arm("eager")), worker(mode_arm("default"))
    regional = worker(what_if_arm(WhatIfPlan("regional", ())))  # it runs the step to plan
    assert len(eager.first_steps) == 2 and eager.first_steps[0] != eager.first_steps[1]
    checks, note = arm_checks(
        {"eager": [eager], "default": [default], "what-if regional": [regional]}
    )
    assert note == Note("first_steps_compared", values={"steps": 2.0})
    assert regional.what_if is not None and regional.what_if.status == "measured", regional
    assert checks["default"].matches, checks
    assert checks["what-if regional"].matches, checks

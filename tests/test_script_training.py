"""A training script timed one loop iteration per unit gets the training placements (#59): the
optimizers its loop steps are found where the script holds them, plain or in a wrapper (as
accelerate's `AcceleratedOptimizer` or Lightning's strategy hold them), and the placements a
factory's step gets are planned, except compiling the whole step (the script's own loop)."""

from __future__ import annotations

import dataclasses
import sys

import pytest
import torch

from advisor.core.model import Settings
from advisor.measure import torch_adapter
from advisor.measure.placement import optimizers_held
from advisor.measure.script_load import load_script
from advisor.measure.script_survey import survey_script
from advisor.measure.script_target import measured_spec, planned, script_spec
from advisor.measure.training_variants import planned_kinds, training_step, training_variant
from tests.test_cli import ROOT

SCRIPTS = ROOT / "tests" / "targets" / "scripts"


class Holder:
    """A framework's wrapper: the torch optimizer one attribute deep."""

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self.optimizer = optimizer


def test_the_frames_name_plain_and_wrapped_optimizers_once() -> None:
    model = torch.nn.Linear(2, 2)
    plain = torch.optim.SGD(model.parameters(), lr=0.1)
    wrapper = Holder(torch.optim.AdamW(model.parameters()))
    also = plain  # the same optimizer under another name counts once
    found = torch_adapter.optimizers_in_frames(sys._getframe())
    assert found == {"plain": plain, "wrapper.optimizer": wrapper.optimizer}
    assert also is plain


def test_the_step_hook_records_what_steps_through_a_wrapper() -> None:
    model = torch.nn.Linear(2, 2)
    wrapper = Holder(torch.optim.SGD(model.parameters(), lr=0.1))
    seen: list[object] = []
    unhook = torch_adapter.record_optimizer_steps(seen.append)
    assert unhook is not None
    try:
        model(torch.ones(1, 2)).sum().backward()
        wrapper.optimizer.step()
    finally:
        unhook()
    wrapper.optimizer.step()  # removed: not recorded
    assert seen == [wrapper.optimizer]


@pytest.fixture(scope="module")
def loop_workload():  # type: ignore[no-untyped-def]
    spec = dataclasses.replace(script_spec(str(SCRIPTS / "train_wrapped.py"), ()), cwd=str(ROOT))
    survey = planned(spec, survey_script(spec, budget_s=120), Settings())
    assert survey.unit == "iteration"
    workload = load_script(measured_spec(spec, survey), "cpu")
    yield workload
    workload.fn.runner.unhook()  # paused for good: no hook left in this process


def test_a_script_loop_steps_the_optimizer_its_wrapper_holds(loop_workload) -> None:  # type: ignore[no-untyped-def]
    # paused at the first forward, before any step: found in the script's frames
    held = optimizers_held(loop_workload)
    assert list(held) == ["opt.optimizer"]
    assert isinstance(held["opt.optimizer"], torch.optim.AdamW)
    step = training_step(loop_workload)
    assert step is not None and step.module_compiled and not step.step_compilable
    # the optimizer placements of a model compiled in place, not the whole step
    assert planned_kinds(step) == ("optimizer", "fused", "foreach", "eager_fused")
    assert training_variant("step", loop_workload, []) is None
    optimizer = training_variant("optimizer", loop_workload, [])
    assert optimizer is not None
    assert [u.path for u in optimizer.record.subjects] == ["opt.optimizer.step"]
    # one iteration later the hook has seen it step: still one optimizer, the same name, and
    # the hook is gone (it would be traced into every compiled optimizer step)
    runner = loop_workload.fn.runner
    assert runner._unhook is not None
    loop_workload.fn()
    assert runner.stepped == [held["opt.optimizer"]] and runner._unhook is None
    assert list(optimizers_held(loop_workload)) == ["opt.optimizer"]


def test_an_optimizer_held_deeper_is_found_once_it_has_stepped() -> None:
    # Lightning's strategy holds it several objects deep: the step hook finds it
    from advisor.measure.script_load import ScriptRunner

    runner = ScriptRunner(script_spec(str(SCRIPTS / "train_wrapped.py"), ()))
    assert runner.optimizers() == {}  # not started: nothing held, nothing stepped
    deep = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    runner._stepped(deep)
    runner._stepped(deep)
    assert runner.optimizers() == {"stepped[0] (SGD)": deep}


def test_a_script_paused_at_one_call_leaves_no_step_hook(loop_workload) -> None:  # type: ignore[no-untyped-def]
    # an inference script's runner stays paused for good: a hook left behind would be traced
    # into every later compile of an optimizer step in this process (a recompile seen in
    # test_train_scenarios when it ran after the script tests)
    from advisor.measure.script_load import ScriptRunner

    spec = dataclasses.replace(loop_workload.fn.runner.spec, unit="call")
    runner = ScriptRunner(spec)
    runner.resume()  # paused at the measured callable's first call, for good
    assert runner.calls == 1 and runner._unhook is None and runner.stepped == []

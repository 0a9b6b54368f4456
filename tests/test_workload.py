from __future__ import annotations

import pytest
import torch

from advisor.core.errors import AdvisorError
from advisor.measure.workload import Workload, load_target, scenario_names

TARGETS = "tests/targets/good.py"


def test_tuple_factory() -> None:
    wl = load_target(f"{TARGETS}:factory", "cpu")
    assert wl.name == "good.factory"
    assert wl.fn is torch.nn.functional.relu
    assert len(wl.args) == 1


def test_workload_factory_keeps_name_and_kwargs() -> None:
    wl = load_target(f"{TARGETS}:as_workload", "cpu")
    assert wl.name == "adder"
    assert torch.equal(wl(), torch.full((2,), 2.0))


def test_single_argument_is_wrapped() -> None:
    wl = load_target(f"{TARGETS}:single_arg", "cpu")
    assert len(wl.args) == 1 and isinstance(wl.args[0], torch.Tensor)


def test_factory_without_device_argument_is_moved_to_the_device() -> None:
    # "meta" stands in for a second device on a CPU-only machine.
    wl = load_target(f"{TARGETS}:device_agnostic", "meta")
    assert wl.name == "agnostic"
    assert isinstance(wl.fn, torch.nn.Linear) and wl.fn.weight.device.type == "meta"
    assert wl.args[0].device.type == "meta"
    assert wl.kwargs["extra"][0].device.type == "meta" and wl.kwargs["extra"][1] == 2.0
    # A factory that takes the device is trusted to place things itself.
    assert load_target(f"{TARGETS}:factory", "cpu").args[0].device.type == "cpu"


def test_module_target() -> None:
    wl = load_target("tests.targets.good:factory", "cpu")
    assert wl.fn is torch.nn.functional.relu


def test_scenario_name_target() -> None:
    assert "clean_mlp" in scenario_names()
    wl = load_target("clean_mlp", "cpu")
    assert wl.name == "clean_mlp"
    assert isinstance(wl, Workload)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("tests/targets/missing.py:factory", r"^file not found: tests/targets/missing.py$"),
        (
            "tests/targets/syntax_error.py:factory",
            r"^syntax error in tests/targets/syntax_error.py:1",
        ),
        (f"{TARGETS}:nope", r"has no factory named 'nope'"),
        (f"{TARGETS}:NOT_A_FACTORY", r"is not callable"),
        (f"{TARGETS}:raises", r"raised RuntimeError: no weights here$"),
        (f"{TARGETS}:device_agnostic_raises", r"device_agnostic_raises\(\) raised ValueError"),
        (f"{TARGETS}:non_callable", r"non-callable \(int\)"),
        (f"{TARGETS}:bare_callable", r"bare callable"),
        (f"{TARGETS}:wrong_shape", r"returned tuple; expected a Workload"),
        ("no_such_scenario", r"^unknown scenario 'no_such_scenario' \(known: .*clean_mlp"),
        ("no.such.module:factory", r"cannot import module 'no.such.module'"),
        ("tests/targets/good.py:1x", r"is not a factory name"),
        ("bad name!", r"is not a scenario name"),
        ("tests/targets:factory", r"not a Python file"),
    ],
)
def test_target_errors(target: str, message: str) -> None:
    with pytest.raises(AdvisorError, match=message) as info:
        load_target(target, "cpu")
    assert "\n" not in str(info.value)


def test_factory_parameters() -> None:
    w = load_target("tests/targets/good.py:sized", "cpu", {"size": 3, "scale": 2.0})
    assert w.args[0].shape == (3,) and w.args[1] == 2.0
    with pytest.raises(AdvisorError, match="does not take the parameter"):
        load_target("tests/targets/good.py:sized", "cpu", {"colour": "red"})

"""Library options (#59): a library argument left None that the library works out from the
inputs on every call, on the way to a break. Found from the break's stack (`if NAME is None:`
around a frame's line, a class on the stack taking NAME in `__init__` and keeping it), its
value recorded from one eager call, planned as a `library_option` what-if (the argument set on
the live objects while measured, put back after), measured, and said as the argument to pass.
Capture and measurement on the eager backend (the logic is Dynamo's, not Inductor's)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from advisor.core.model import BreakSite, LibraryOption, Location
from advisor.measure import harness
from advisor.measure.library_option import recorded_values, with_library_options
from advisor.measure.patching import NotInstallable, SetOption
from advisor.measure.rewrite.option import computed_default, library_option, option_patch
from advisor.measure.stages import measure_what_if, what_if_plan
from advisor.measure.workload import load_target
from advisor.render.patch_words import patch_caveat, patch_summary
from tests.support.eager_capture import QUICK, captured_sites, eager_backend  # noqa: F401

ROOT = Path(__file__).resolve().parent
TARGET = "tests/targets/library_option.py:workload"
sys.path.insert(0, str(ROOT / "targets" / "site-packages"))
import optionlib  # noqa: E402

LIB = optionlib.__file__
LINES = Path(LIB).read_text().splitlines()


def line_of(text: str) -> int:
    return next(i for i, t in enumerate(LINES, 1) if text in t)


def frame(text: str, function: str) -> Location:
    return Location(LIB, line_of(text), function, text)


BOUND = frame("return float(x.abs().max().item())", "bound")
NORMALIZE = frame("scale = bound(x)", "normalize")
FORWARD = frame("return normalize(x, self.scale, self.eps)", "forward")
UNKEPT = frame("return normalize(x) * self.factor", "forward")


def item_break(*stack: Location) -> BreakSite:
    return BreakSite("B1", "GB0124", "Unsupported Tensor.item() call", BOUND, stack=stack)


def test_the_option_is_found_from_the_stack() -> None:
    computed = computed_default(NORMALIZE)
    assert computed is not None and computed.name == "scale" and computed.function == "normalize"
    assert computed.if_line == line_of("if scale is None:")
    option = library_option(item_break(FORWARD, NORMALIZE, BOUND))
    assert option is not None
    assert (option.name, option.owner, option.owner_file) == ("scale", "Normalizer", LIB)
    assert option.owner_line == line_of("def __init__(self, scale: float | None = None, eps")


@pytest.mark.parametrize(
    "stack",
    [
        (UNKEPT, NORMALIZE, BOUND),  # the class takes `scale` but does not keep it
        (FORWARD, BOUND),  # no `if NAME is None:` on the way
        (),  # no stack: the break's own line holds no such block
    ],
)
def test_no_option_where_the_stack_shows_none(stack: tuple[Location, ...]) -> None:
    assert library_option(item_break(*stack)) is None


def test_the_value_is_recorded_from_one_call_and_only_a_plain_one() -> None:
    option = library_option(item_break(FORWARD, NORMALIZE, BOUND))
    assert option is not None
    norm, x = optionlib.Normalizer(), torch.randn(4, 8)
    values = recorded_values(lambda: norm(x), [option])
    (value,) = values.values()
    assert float(value) == pytest.approx(float(x.abs().max()))

    # a tensor is not a value source can spell: the user passes what their data has
    def tensor_scale(x: torch.Tensor, scale: object = None) -> torch.Tensor:
        if scale is None:
            scale = x.abs().amax(dim=0)
        return x / scale

    code = tensor_scale.__code__
    here = Location(code.co_filename, code.co_firstlineno + 1, code.co_qualname, "")
    tensor_option = LibraryOption("scale", "X", "", 0, here, code.co_firstlineno + 2)
    assert recorded_values(lambda: tensor_scale(x), [tensor_option]) == {}


def test_setting_the_option_puts_the_objects_own_value_back() -> None:
    option = library_option(item_break(FORWARD, NORMALIZE, BOUND))
    assert option is not None
    patch = option_patch(LibraryOption(**{**option.__dict__, "value": "2.5"}))
    assert patch is not None and patch.kind == "library_option" and not patch.hunks
    assert "pass `scale=` to `Normalizer`" in patch_summary(patch)
    assert "`scale=2.5` is what the library worked out" in (patch_caveat(patch) or "")
    with pytest.raises(NotInstallable, match="no live Normalizer"):
        with SetOption(patch):
            pass
    norm = optionlib.Normalizer()
    with SetOption(patch):
        assert norm.scale == 2.5
    assert norm.scale is None
    # no value recorded: nothing to measure with
    assert option_patch(option) is None


@pytest.mark.usefixtures("eager_backend")
def test_the_option_is_planned_and_measured_on_a_real_target() -> None:
    workload = load_target(TARGET, "cpu")
    sites = with_library_options(captured_sites(TARGET), workload)
    (item,) = [s for s in sites if s.option is not None]
    assert item.option is not None and item.option.value is not None
    (plan,) = [p for p in what_if_plan(sites) if p.patch and p.patch.kind == "library_option"]
    assert plan.patch is not None and plan.patch.names[:1] == ("scale",)
    reference = harness.eager_reference(workload, [])
    w = measure_what_if(workload, plan, reference, QUICK, "cpu", sites)
    assert w.status == "measured", w.error
    assert item.id in w.removed and not w.new_breaks
    assert w.output is not None and w.output.matches


@pytest.mark.usefixtures("eager_backend")
def test_an_argument_the_library_does_not_keep_plans_nothing() -> None:
    target = "tests/targets/library_option.py:unkept"
    sites = with_library_options(captured_sites(target), load_target(target, "cpu"))
    assert sites and not [s for s in sites if s.option is not None]
    assert not [p for p in what_if_plan(sites) if p.patch and p.patch.kind == "library_option"]

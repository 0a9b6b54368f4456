"""Placements and no-ops on the measuring side: which modules a workload reaches, which of them
compile without a break on their own, which function holds a break, running chosen functions
eagerly, and side effects made no-ops. Compiles use the eager backend (Dynamo's breaks do not
depend on the backend)."""

from __future__ import annotations

import builtins
import logging
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from advisor.core.model import BreakSite, Location, Settings
from advisor.measure import placement, torch_adapter
from advisor.measure.capture import CaptureSession
from advisor.measure.harness import eager_reference
from advisor.measure.variants import noop_variant, regional_variant, silenced
from advisor.measure.whatif import measure_variant
from advisor.measure.workload import Workload

HERE = Path(__file__).resolve()


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x)) + x


class Chatty(nn.Module):
    """Blocks that compile clean, and a forward that prints between them."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(3))
        self.head = nn.Linear(8, 2)

    def report(self, x: torch.Tensor) -> None:
        print("hidden", tuple(x.shape))  # break-here

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        self.report(x)
        return self.head(x)


BREAK_LINE = next(
    i for i, line in enumerate(HERE.read_text().splitlines(), 1) if line.endswith("# break-here")
)


@pytest.fixture(autouse=True)
def clean_dynamo() -> Any:
    torch_adapter.reset_dynamo()
    yield
    torch_adapter.reset_dynamo()


def chatty() -> tuple[Chatty, torch.Tensor]:
    torch.manual_seed(0)
    return Chatty().eval(), torch.randn(4, 8)


def test_modules_are_found_behind_a_lambda_a_bound_method_and_a_global() -> None:
    model, x = chatty()
    assert placement.module_roots(Workload(model, (x,))) == {"model": model}
    assert list(placement.module_roots(Workload(lambda t: model(t), (x,))).values()) == [model]
    assert list(placement.module_roots(Workload(model.forward, (x,))).values()) == [model]
    step = Workload(lambda t: t, (x,), compiled_module=model)
    assert placement.module_roots(step) == {"model": model}
    assert placement.module_roots(Workload(lambda t: t * 2, (x,))) == {}


def test_the_largest_break_free_modules_are_the_regions() -> None:
    model, x = chatty()
    workload = Workload(model, (x,))
    roots = placement.module_roots(workload)
    recorded = placement.record_calls(workload, roots)
    assert recorded["model.blocks.0"].calls == 1 and recorded["model"].calls == 1
    regions = placement.clean_regions(roots, recorded)
    # the root prints, so it is searched inside; a lone Linear is not worth a region
    assert [path for path, _ in regions] == [f"model.blocks.{i}" for i in range(3)]
    units = placement.region_units(regions)
    assert {u.name for u in units} == {"Block"} and units[0].where is not None
    assert units[0].where.file == str(HERE)


def test_a_clean_root_needs_no_regions() -> None:
    torch.manual_seed(0)
    block, x = Block().eval(), torch.randn(4, 8)
    workload = Workload(block, (x,))
    roots = placement.module_roots(workload)
    assert placement.clean_regions(roots, placement.record_calls(workload, roots)) == []


class Operator:
    """A library object passed between modules whose `shape` is a method (as in
    linear_operator), not a tuple."""

    def __init__(self, t: torch.Tensor) -> None:
        self.t = t

    def shape(self) -> torch.Size:
        return self.t.shape


class UsesAnOperator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, op: Operator) -> torch.Tensor:
        return torch.relu(self.fc(x)) + op.t


class TakesAnOperator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = UsesAnOperator()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        print("x")  # a break in the root, so its children are searched
        return self.inner(x, Operator(x))


def test_inputs_of_any_type_are_keyed_without_reading_their_shape(
    capsys: pytest.CaptureFixture[str],
) -> None:
    torch.manual_seed(0)
    workload = Workload(TakesAnOperator().eval(), (torch.randn(4, 8),))
    roots = placement.module_roots(workload)
    regions = placement.clean_regions(roots, placement.record_calls(workload, roots))
    assert [path for path, _ in regions] == ["model.inner"]


def print_site() -> BreakSite:
    where = Location(str(HERE), BREAK_LINE, "report", "print(...)")
    return BreakSite("B1", "GB0059", "Failed to trace builtin operator", where)


def test_the_function_holding_a_break_is_found_not_the_compiled_one() -> None:
    model, x = chatty()
    (found,) = placement.functions_holding((print_site(),), Workload(model, (x,)))
    unit, fn = found
    assert fn is Chatty.report and unit.path == "Chatty.report"
    assert unit.where is not None and unit.where.line == Chatty.report.__code__.co_firstlineno
    forward_site = BreakSite("B2", None, "x", Location(str(HERE), BREAK_LINE + 3, "forward"))
    assert placement.functions_holding((forward_site,), Workload(model, (x,))) == []
    import torch._dynamo.polyfills.builtins as polyfills

    polyfill = polyfills.all.__code__  # Dynamo's `all`: a break can sit in it
    in_dynamo = BreakSite(
        "B3", None, "x", Location(polyfill.co_filename, polyfill.co_firstlineno + 1, "all")
    )
    assert placement.functions_holding((in_dynamo,), Workload(model, (x,))) == []


def breaks_of(fn: Any, *args: Any) -> list[tuple[str | None, int]]:
    session = CaptureSession()
    with session:
        torch.compile(fn, backend="eager")(*args)
    return [(s.gb_code, s.where.line) for s in session.result().sites]


def test_a_disabled_function_runs_eagerly_and_is_put_back() -> None:
    model, x = chatty()
    assert breaks_of(model, x) == [("GB0059", BREAK_LINE)]
    original = Chatty.report
    with torch_adapter.DisabledFrames([Chatty.report]):
        assert Chatty.report is not original
        torch_adapter.reset_dynamo()
        codes = [code for code, _ in breaks_of(model, x)]
    assert codes and "GB0059" not in codes  # the print is not traced: the call is skipped
    assert Chatty.report is original


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_side_effects_made_no_ops_and_put_back(capsys: pytest.CaptureFixture[str]) -> None:
    logger = logging.getLogger("advisor-test-noop")
    records = _Records()
    logger.addHandler(records)
    try:
        with silenced("print"):
            print("hidden")
        with silenced("logger:warning"):
            logger.warning("hidden")
        with silenced("warn"), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.warn("hidden", stacklevel=1)
        assert caught == [] and records.messages == [] and capsys.readouterr().out == ""
        print("shown")
        logger.warning("shown")
        assert builtins.print is print and capsys.readouterr().out == "shown\n"
        assert records.messages == ["shown"]
    finally:
        logger.removeHandler(records)
    with pytest.raises(ValueError, match="unknown no-op"), silenced("shout"):
        pass


@pytest.fixture
def eager_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        torch_adapter,
        "compile_mode",
        lambda fn, _backend, fullgraph: torch.compile(fn, backend="eager", fullgraph=fullgraph),
    )


SETTINGS = Settings(warmup=1, repeats=3, budget_s=1.0, min_block_s=1e-3, target_ci=0.0)


@pytest.mark.usefixtures("eager_backend")
def test_the_regional_variant_is_measured_with_outputs_checked() -> None:
    model, x = chatty()
    workload = Workload(model, (x,), name="chatty")
    variant = regional_variant(workload, [print_site()])
    assert variant is not None
    assert [u.path for u in variant.record.subjects] == [f"model.blocks.{i}" for i in range(3)]
    reference = eager_reference(workload, [])
    w = measure_variant(workload, variant, [print_site()], reference, SETTINGS, "cpu")
    assert (w.status, w.kind, w.knob) == ("measured", "regional", "placement:regional"), w.error
    assert w.removed == ("B1",) and w.output is not None and w.output.matches
    assert w.baseline_output is not None and w.baseline_output.matches
    assert w.saving_ci_ms is not None and w.rounds >= 3


@pytest.mark.usefixtures("eager_backend")
def test_the_print_made_a_no_op_removes_its_break() -> None:
    model, x = chatty()
    workload = Workload(model, (x,), name="chatty")
    reference = eager_reference(workload, [])
    variant = noop_variant("print", [print_site()])
    w = measure_variant(workload, variant, [print_site()], reference, SETTINGS, "cpu")
    assert (w.status, w.kind, w.knob, w.fix) == ("measured", "noop", "noop:print", "delete")
    assert w.removed == ("B1",) and not w.new_breaks


@pytest.mark.usefixtures("eager_backend")
def test_a_disabled_helper_is_traced_when_its_boundary_is_removed() -> None:
    from advisor.measure.variants import undisable_variant
    from advisor.measure.workload import load_target
    from scenarios import disabled_helper

    workload = load_target("disabled_helper", "cpu")
    line = disabled_helper.EXPECTED_LINE
    where = Location(
        disabled_helper.__file__,
        line,
        "forward",
        "q, k = apply_rotary_disabled(q, k, self.cos, self.sin)",
    )
    site = BreakSite("B1", "GB0098", "Skip calling `torch.compiler.disable()`d function", where)
    variant = undisable_variant([site])
    assert variant is not None and variant.record.kind == "undisable"
    reference = eager_reference(workload, [])
    w = measure_variant(workload, variant, [site], reference, SETTINGS, "cpu")
    assert w.status == "measured" and w.removed == ("B1",) and w.output and w.output.matches
    # the wrapper is back where it was
    assert hasattr(disabled_helper.apply_rotary_disabled, "_torchdynamo_orig_callable")
    nothing = BreakSite(
        "B2", "GB0098", "x", Location(disabled_helper.__file__, line, "f", "y = f(x)")
    )
    assert undisable_variant([nothing]) is None


class Holder:
    @staticmethod
    @torch.compiler.disable
    def helper(x: torch.Tensor) -> torch.Tensor:
        return x + 1


def test_a_staticmethod_wrapper_is_replaced_by_a_staticmethod() -> None:
    wrapper = Holder.__dict__["helper"].__func__
    with torch_adapter.EnabledFrames([wrapper]):
        assert isinstance(Holder.__dict__["helper"], staticmethod)
        assert Holder().helper(torch.zeros(1)).item() == 1.0  # no `self` passed in
        assert not hasattr(Holder.helper, "_torchdynamo_orig_callable")
    assert Holder.helper is wrapper

"""The training scenarios (`scenarios/train_*.py`): each loads with its metadata, Dynamo reports
the stated break (code and line) for the workload and none for the fixed variant, and the step
trains: three calls, finite losses that match the fixed variant's.

Compiles use backend="eager" only (Dynamo's break decisions do not depend on the backend). A
workload with `compiled_module` is compiled as the advisor does it: that module in place
(`module.compile()`), its training step eager around it; otherwise the step itself is compiled.
Breaks are read from the in-process structured trace (tests/support/dynamo_trace.py), as in
tests/test_scenarios.py.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import torch

from advisor import Workload
from tests.support.dynamo_trace import (
    Capture,
    compiled_eager,
    dynamo_reset_on_one_thread,
    traced_calls,
)

SCENARIOS = ["train_item", "train_print", "train_branch", "train_mask", "train_whole_step"]
MODULE_COMPILED = ["train_item", "train_print", "train_branch", "train_mask"]
VERDICTS = {"rewrite", "isolate", "ignore"}
STEPS = 3


def capture(w: Workload, calls: int = STEPS) -> Capture:
    """Compile `w` (backend=eager), run `calls` steps, and collect breaks, compiles and losses
    (the outputs)."""
    return traced_calls(lambda: compiled_eager(w), calls)


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"scenarios.{name}")


def _build(name: str, variant: str = "workload") -> Workload:
    return getattr(_module(name), variant)("cpu")


@functools.cache
def eager_losses(name: str, variant: str) -> tuple[torch.Tensor, ...]:
    """The losses of STEPS eager steps of a fresh workload (cached: the tests compare against
    them and each run trains from the same seed)."""
    w = _build(name, variant)
    return tuple(w() for _ in range(STEPS))


@pytest.fixture(autouse=True)
def _reset_dynamo_one_thread() -> Iterator[None]:
    with dynamo_reset_on_one_thread():
        yield


@pytest.mark.parametrize("name", SCENARIOS)
def test_loads_with_metadata(name: str) -> None:
    mod = _module(name)
    w, f = _build(name), _build(name, "fixed")
    assert isinstance(w, Workload) and isinstance(f, Workload)
    assert w.name == name and f.name == f"{name}.fixed"
    assert (w.compiled_module is not None) == (name in MODULE_COMPILED)
    assert mod.PATTERN and mod.EXPECTED_VERDICT in VERDICTS
    assert mod.FIX_KIND in ("isolate", "rewrite", "delete")
    assert len((mod.__doc__ or "").split("\n", 1)[0]) > 20, "a one-line summary first"
    assert len(mod.__doc__ or "") > 200, "the docstring explains the break and the fix"
    assert re.fullmatch(r"GB\d{4}", mod.EXPECTED_GB_CODE)
    assert mod.EXPECTED_GB_CODE in set(torch._dynamo.exc._load_gb_type_to_gb_id_map().values())
    line = Path(mod.__file__).read_text().splitlines()[mod.EXPECTED_LINE - 1]
    assert line.rstrip().endswith("# graph-break")


@pytest.mark.parametrize("name", SCENARIOS)
def test_steps_train_and_fixed_matches_in_eager(name: str) -> None:
    """Same seed, same data: the workload and its fix take the same steps (the loss changes
    from step to step because each step updates the weights)."""
    torch.manual_seed(1234)  # the rng state a test leaves behind must not matter: seeded
    losses = eager_losses(name, "workload")
    assert all(loss.ndim == 0 and torch.isfinite(loss) for loss in losses), losses
    assert not losses[0].requires_grad
    assert losses[0] != losses[-1], "the weights change between steps"
    torch.testing.assert_close(eager_losses(name, "fixed"), losses)


@pytest.mark.parametrize("name", MODULE_COMPILED)
def test_workload_breaks_where_stated(name: str) -> None:
    mod = _module(name)
    cap = capture(_build(name))
    assert cap.breaks, f"{name}: no graph break captured"
    for br in cap.breaks:
        assert br.codes == [mod.EXPECTED_GB_CODE], (name, br.codes)
        assert br.innermost_in(Path(mod.__file__)) == mod.EXPECTED_LINE, (name, br.user_stack)
    assert all(fail is None for _, _, _, fail in cap.compiles), cap.compiles
    assert cap.recompiles == getattr(mod, "EXPECTED_RECOMPILES", 0), cap.compiles
    torch.testing.assert_close(tuple(cap.outputs), eager_losses(name, "workload"))


def test_whole_step_breaks_at_backward_and_in_torch() -> None:
    """The compiled step breaks at `loss.backward()` (the stated line), at zero_grad, and inside
    torch's optimizer code, where the fused AdamW call makes Dynamo skip AdamW.step's frame."""
    mod = _module("train_whole_step")
    path = Path(mod.__file__)
    source = path.read_text().splitlines()
    cap = capture(_build("train_whole_step"))
    in_step = {b.innermost_in(path): b.codes for b in cap.breaks if b.file == str(path)}
    zero_grad = next(i for i, text in enumerate(source, 1) if "optimizer.zero_grad(" in text)
    assert in_step == {zero_grad: ["GB0008"], mod.EXPECTED_LINE: [mod.EXPECTED_GB_CODE]}, in_step
    in_torch = [b for b in cap.breaks if b.file != str(path)]
    assert in_torch and all("/torch/optim/" in b.file for b in in_torch), cap.breaks
    assert {b.codes[0] for b in cap.breaks} == set(mod.ALL_GB_CODES), cap.breaks
    assert any(b.codes == ["GB0098", "GB7000"] for b in in_torch), cap.breaks
    assert [fail for _, _, name, fail in cap.compiles if fail] == ["Unsupported"], cap.compiles
    assert cap.recompiles == 0, cap.compiles
    torch.testing.assert_close(tuple(cap.outputs), eager_losses("train_whole_step", "workload"))


@pytest.mark.parametrize("name", SCENARIOS)
def test_fixed_has_no_break(name: str) -> None:
    cap = capture(_build(name, "fixed"))
    assert cap.breaks == [], (name, [(b.codes, b.file, b.line) for b in cap.breaks])
    assert all(fail is None for _, _, _, fail in cap.compiles), cap.compiles
    assert cap.recompiles == 0, cap.compiles
    assert len(cap.compiles) == 1, cap.compiles
    torch.testing.assert_close(tuple(cap.outputs), eager_losses(name, "fixed"))

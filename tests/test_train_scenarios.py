"""The training scenarios (`scenarios/train_*.py`): each loads with its metadata, Dynamo reports
the stated break (code and line) for the workload and none for the fixed variant, and the step
trains: three calls, finite losses that match the fixed variant's.

Compiles use backend="eager" only (Dynamo's break decisions do not depend on the backend). A
workload with `compiled_module` is compiled as the advisor does it: that module in place
(`module.compile()`), its training step eager around it; otherwise the step itself is compiled.
Breaks are read from the in-process structured trace (logger `torch.__trace`, artifact
`dynamo_graph_break_reason`), parsed as in tests/test_scenarios.py.
"""

from __future__ import annotations

import functools
import importlib
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from advisor import Workload

SCENARIOS = ["train_item", "train_print", "train_branch", "train_mask", "train_whole_step"]
MODULE_COMPILED = ["train_item", "train_print", "train_branch", "train_mask"]
VERDICTS = {"rewrite", "isolate", "ignore"}
STEPS = 3

_LINK = re.compile(r"compile-graph-break-site/gb/gb(\d+)\.html")
_AT = re.compile(r"Graph break in user code at (.+):(\d+)")
_FRAME = re.compile(r'File "(.+)", line (\d+), in ')


@dataclass
class Break:
    codes: list[str]  # root first, then chained codes (e.g. GB7000)
    file: str
    line: int
    user_stack: list[tuple[str, int]]

    def innermost_in(self, path: Path) -> int | None:
        lines = [ln for f, ln in self.user_stack if Path(f).resolve() == path.resolve()]
        return lines[-1] if lines else None


@dataclass
class Capture:
    breaks: list[Break] = field(default_factory=list)
    compiles: list[tuple[int, int, str | None, str | None]] = field(default_factory=list)
    losses: list[torch.Tensor] = field(default_factory=list)

    @property
    def recompiles(self) -> int:
        return sum(1 for _, fcid, _, _ in self.compiles if fcid > 0)


def _parse_break(payload: str) -> Break:
    at = _AT.search(payload)
    assert at is not None, payload[:200]
    codes: list[str] = []
    for num in _LINK.findall(payload):
        code = f"GB{num}"
        if code not in codes:
            codes.append(code)
    stack: list[tuple[str, int]] = []
    if "User code traceback:" in payload:
        section = payload.split("User code traceback:", 1)[1]
        section = section.split("Traceback (most recent call last)", 1)[0]
        stack = [(f, int(n)) for f, n in _FRAME.findall(section)]
    return Break(codes, at.group(1), int(at.group(2)), stack)


class _TraceHandler(logging.Handler):
    def __init__(self, capture: Capture) -> None:
        super().__init__(logging.DEBUG)
        self.capture = capture

    def emit(self, record: logging.LogRecord) -> None:
        md: dict[str, Any] = getattr(record, "metadata", None) or {}
        artifact = md.get("artifact")
        if isinstance(artifact, dict) and artifact.get("name") == "dynamo_graph_break_reason":
            self.capture.breaks.append(_parse_break(str(getattr(record, "payload", ""))))
        metrics = md.get("compilation_metrics")
        if isinstance(metrics, dict):
            self.capture.compiles.append(
                (
                    int(md.get("frame_id", -1)),
                    int(md.get("frame_compile_id", -1)),
                    metrics.get("co_name"),
                    metrics.get("fail_type"),
                )
            )


def compiled_eager(w: Workload) -> Callable[[], Any]:
    """One training step per call, compiled with backend="eager" where the workload says."""
    if w.compiled_module is not None:
        w.compiled_module.compile(backend="eager")  # in place; the step stays eager
        return w
    compiled = torch.compile(w.fn, backend="eager")
    return lambda: compiled(*w.args, **w.kwargs)


def capture(w: Workload, calls: int = STEPS) -> Capture:
    """Compile `w` (backend=eager), run `calls` steps, and collect breaks, compiles and losses."""
    torch._dynamo.reset()
    result = Capture()
    handler = _TraceHandler(result)
    trace_log = logging.getLogger("torch.__trace")
    old_level = trace_log.level
    trace_log.setLevel(logging.DEBUG)
    trace_log.addHandler(handler)
    try:
        step = compiled_eager(w)
        result.losses = [step() for _ in range(calls)]
    finally:
        trace_log.removeHandler(handler)
        trace_log.setLevel(old_level)
        torch._dynamo.reset()
    return result


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
    """Dynamo reset around each test, and one torch thread: on a shared 2-core machine a
    training step with two threads ran up to 100x slower (threads waiting on each other)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch._dynamo.reset()
    try:
        yield
    finally:
        torch._dynamo.reset()
        torch.set_num_threads(threads)


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
    torch.testing.assert_close(tuple(cap.losses), eager_losses(name, "workload"))


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
    torch.testing.assert_close(tuple(cap.losses), eager_losses("train_whole_step", "workload"))


@pytest.mark.parametrize("name", SCENARIOS)
def test_fixed_has_no_break(name: str) -> None:
    cap = capture(_build(name, "fixed"))
    assert cap.breaks == [], (name, [(b.codes, b.file, b.line) for b in cap.breaks])
    assert all(fail is None for _, _, _, fail in cap.compiles), cap.compiles
    assert cap.recompiles == 0, cap.compiles
    assert len(cap.compiles) == 1, cap.compiles
    torch.testing.assert_close(tuple(cap.losses), eager_losses(name, "fixed"))

"""What the what-if tests on real targets share: the compiled modes on Dynamo's eager backend
(the logic under test is Dynamo's capture and the arm's own checks, not Inductor's code), and
the breaks a target's default mode captures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from advisor.core.model import BreakSite, Settings
from advisor.measure import harness, torch_adapter
from advisor.measure.capture import CaptureSession
from advisor.measure.workload import load_target

# A what-if measured quickly: its timing is not what these tests check
QUICK = Settings(warmup=1, repeats=3, budget_s=1.0, min_block_s=1e-3, target_ci=0.0)


@pytest.fixture
def eager_backend(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every compiled mode on the eager backend, Dynamo reset before and after."""
    monkeypatch.setattr(
        torch_adapter,
        "compile_mode",
        lambda fn, _backend, fullgraph: torch.compile(fn, backend="eager", fullgraph=fullgraph),
    )
    torch_adapter.reset_dynamo()
    yield
    torch_adapter.reset_dynamo()


def captured_sites(target: str) -> tuple[BreakSite, ...]:
    """The breaks the target's default mode meets over two calls (then Dynamo reset)."""
    workload = load_target(target, "cpu")
    with CaptureSession() as session:
        call = harness.compiled_call(workload, "eager", False)
        call()
        call()
    torch_adapter.reset_dynamo()
    return session.result().sites

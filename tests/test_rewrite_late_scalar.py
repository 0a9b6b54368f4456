"""`late_scalar`: a scalar copied out with `.item()` / `.tolist()` and only returned is
converted at the return instead, so the tensor work after it joins the graph before it and the
break moves to the end, where nothing is left to resume. Refused where the value is read, the
name rebound or a tensor changed in place before the return. End to end on a real function:
the break at the line is gone, the one at the return is the patch's on purpose (not a new
break), and the output matches eager (eager backend: Dynamo's breaks do not depend on it)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from advisor.core.model import Patch, Settings
from advisor.measure import harness, torch_adapter
from advisor.measure.capture import CaptureSession
from advisor.measure.rewrite import Refusal, patch_for
from advisor.measure.stages import measure_what_if, what_if_plan
from advisor.measure.workload import load_target

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "tests" / "targets" / "late_item.py"


def patched(tmp_path: Path, body: str, line: int) -> Patch | Refusal:
    path = tmp_path / "m.py"
    path.write_text("import torch\n\n\n" + textwrap.dedent(body))
    return patch_for(str(path), line, "scalar_extraction")


def test_the_conversion_moves_to_the_return(tmp_path: Path) -> None:
    body = """\
    def f(x):
        value = x.sum().item()  # graph-break
        y = x * 2
        return y, {"v": value}
    """
    patch = patched(tmp_path, body, 5)
    assert isinstance(patch, Patch) and patch.kind == "late_scalar"
    assert patch.edits[0].after == textwrap.dedent(
        """\
        def f(x):
            value = x.sum()  # graph-break
            y = x * 2
            return y, {"v": value.item()}
        """
    )
    assert patch.intended_breaks == (7,) and patch.names == ("value",)


@pytest.mark.parametrize(
    "between",
    ["print(value)", "value = 3", "x.add_(1)", "y += 1"],
    ids=["read", "rebound", "in-place method", "augmented"],
)
def test_refused_where_the_value_could_change_before_the_return(
    tmp_path: Path, between: str
) -> None:
    body = f"""\
    def f(x):
        value = x.sum().item()
        y = x * 2
        {between}
        return y, value
    """
    outcome = patched(tmp_path, body, 5)
    assert not (isinstance(outcome, Patch) and outcome.kind == "late_scalar")


def test_the_example_scripts_item_is_converted_at_its_return() -> None:
    path = ROOT / "examples" / "scripts" / "decorated.py"
    line = next(
        i for i, text in enumerate(path.read_text().splitlines(), 1) if "# graph-break" in text
    )
    patch = patch_for(str(path), line, "scalar_extraction")
    assert isinstance(patch, Patch) and patch.kind == "late_scalar"
    assert "+    return tokens, entropy, confidence.item()" in patch.hunks


def test_measured_the_break_moves_to_the_end_and_outputs_match(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    torch_adapter.reset_dynamo()
    workload = load_target(f"{TARGET}:factory", "cpu")
    with CaptureSession() as session:
        call = harness.compiled_call(workload, "eager", False)
        call()
        call()
    torch_adapter.reset_dynamo()
    sites = session.result().sites
    (plan,) = [p for p in what_if_plan(sites) if p.kind == "patch"]
    assert plan.patch is not None and plan.patch.kind == "late_scalar"
    reference = harness.eager_reference(workload, [])
    settings = Settings(warmup=1, repeats=3, budget_s=1.0, min_block_s=1e-3, target_ci=0.0)
    monkeypatch.setattr(
        torch_adapter,
        "compile_mode",
        lambda fn, _backend, fullgraph: torch.compile(fn, backend="eager", fullgraph=fullgraph),
    )
    try:
        w = measure_what_if(workload, plan, reference, settings, "cpu", sites)
    finally:
        torch_adapter.reset_dynamo()
    assert w.status == "measured", w.error
    assert w.removed == w.targets and not w.new_breaks, w.new_breaks
    assert w.output is not None and w.output.matches

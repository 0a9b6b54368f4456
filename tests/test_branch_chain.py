"""An `if/elif/else` in the user's loop (#59): the patch is generated from the captured break,
installed in the arm's process and measured; a branch rewrite that measures slower says why.
Capture and measurement on the eager backend (the logic is Dynamo's, not Inductor's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.core.model import Action, Patch
from advisor.measure import harness
from advisor.measure.rewrite import alternative_patches, patch_for
from advisor.measure.stages import measure_what_if, what_if_plan
from advisor.measure.workload import load_target
from advisor.render.view_actions import _effect
from tests.support.eager_capture import QUICK, captured_sites, eager_backend  # noqa: F401

TARGET = "tests/targets/elif_branch.py:workload"
SETTINGS = QUICK
pytestmark = pytest.mark.usefixtures("eager_backend")


def test_the_elif_chain_patch_removes_the_break_and_matches_eager() -> None:
    workload = load_target(TARGET, "cpu")
    sites = captured_sites(TARGET)
    assert sites and all(s.where.file.endswith("elif_branch.py") for s in sites)
    plans = [p for p in what_if_plan(sites) if p.kind == "patch"]
    assert [p.patch.kind for p in plans if p.patch] == ["tensor_branch"]
    patch = plans[0].patch
    assert patch is not None and "torch.where(condition_2" in patch.hunks
    reference = harness.eager_reference(workload, [])
    w = measure_what_if(workload, plans[0], reference, SETTINGS, "cpu", sites)
    assert w.status == "measured", w.error
    assert set(w.targets) <= set(w.removed) and not w.new_breaks
    assert w.output is not None and w.output.matches


def test_a_branch_rewrite_that_measured_slower_says_both_branches_run() -> None:
    patch = Patch(kind="tensor_branch", file="/u/model.py", line=3, edits=(), hunks="")
    slower = Action("patch", -0.2, (-0.3, -0.1), measured=True, measurable=False, patch=patch)
    assert _effect(slower, 6.28).endswith("rewriting costs more, both branches run on every call")
    other = Action("knob", -0.2, (-0.3, -0.1), measured=True, measurable=False)
    assert "both branches" not in _effect(other, 6.28)


def test_an_if_else_gets_a_torch_cond_patch_beside_the_where_and_both_are_measured() -> None:
    target = "tests/targets/patched_branch.py:workload"
    workload = load_target(target, "cpu")
    sites = captured_sites(target)
    plans = [p for p in what_if_plan(sites) if p.kind == "patch"]
    assert [p.patch.kind for p in plans if p.patch] == ["tensor_branch", "tensor_cond"]
    cond = plans[1].patch
    assert cond is not None
    assert "    (y,) = torch.cond(y.mean() > 0, cond_true, cond_false, (y,))\n" in (
        cond.edits[0].after
    )
    reference = harness.eager_reference(workload, [])
    for plan in plans:
        w = measure_what_if(workload, plan, reference, SETTINGS, "cpu", sites)
        assert w.status == "measured", (plan.label, w.error)
        assert set(w.targets) <= set(w.removed) and not w.new_breaks, plan.label
        assert w.output is not None and w.output.matches, plan.label


@pytest.mark.parametrize(
    ("code", "kinds"),
    [
        # an elif chain: nested wheres only
        (
            "def f(x):\n    if x.sum() > 0:\n        x = x + 1\n    elif x.sum() < -1:\n"
            "        x = x - 1\n    return x\n",
            [],
        ),
        # an if with no else: the name keeps its value in the false branch
        ("def f(x):\n    if x.sum() > 0:\n        x = x * 2\n    return x\n", ["tensor_cond"]),
    ],
)
def test_which_branches_get_a_torch_cond_form(tmp_path: Path, code: str, kinds: list[str]) -> None:
    path = tmp_path / "m.py"
    path.write_text("import torch\n\n" + code, encoding="utf-8")
    first = patch_for(str(path), 4, "data_dependent_branch")
    assert isinstance(first, Patch) and first.kind == "tensor_branch"
    alternatives = alternative_patches(first)
    assert [p.kind for p in alternatives] == kinds
    if alternatives:
        after = alternatives[0].edits[0].after
        assert "    def cond_false(x):\n        return (x,)\n" in after

"""Patches applied together (#59), and the `kept_tensor` rewrite: two breaks in one user function
often pay only together (each patch alone leaves the graph split at the other), so the line
patches of one file are also planned as a set (pairs, and all of them), each part's rewriter
run again on the text the parts before it left; a set that cannot be applied together is
dropped with why. Measured on the eager backend (the logic is Dynamo's, not Inductor's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.core.model import Action, Patch
from advisor.core.patch import PatchPart
from advisor.judge.actions import _first_of_ties
from advisor.measure import harness
from advisor.measure.candidates import plan_candidates
from advisor.measure.rewrite import combined_patch, patch_for
from advisor.measure.rewrite.combine import mapped_line
from advisor.measure.rewrite.outcome import Refusal
from advisor.measure.stages import WhatIfPlan, measure_what_if, patch_combinations, what_if_plan
from advisor.measure.workload import load_target
from advisor.render.patch_words import patch_caveat, patch_summary
from advisor.render.search_words import _label
from tests.support.eager_capture import QUICK, captured_sites, eager_backend  # noqa: F401

TARGET = "tests/targets/two_fixes.py:workload"
FILE = str(Path(__file__).resolve().parent / "targets" / "two_fixes.py")
LINES = Path(FILE).read_text().splitlines()
IF_LINE = next(i for i, t in enumerate(LINES, 1) if t.strip() == "if not keep.all():")
TOLIST_LINE = next(i for i, t in enumerate(LINES, 1) if "self.peaks = y" in t)


def module_text(body: str) -> str:
    return "import torch\n\n\nclass M:\n    def forward(self, x):\n" + body


def test_a_tolist_kept_on_the_object_stays_a_tensor() -> None:
    patch = patch_for(FILE, TOLIST_LINE, "scalar_extraction")
    assert isinstance(patch, Patch) and patch.kind == "kept_tensor"
    assert patch.names == ("self.peaks",)
    assert "self.peaks = y.amax(dim=0).detach()" in patch.edits[0].after
    assert "keep `self.peaks` a tensor" in patch_summary(patch)
    assert "call `.tolist()` where it is read" in (patch_caveat(patch) or "")


@pytest.mark.parametrize(
    ("body", "why"),
    [
        # read again in the same function, which expects the numbers
        (
            "        self.peaks = x.amax(dim=0).tolist()\n        return self.peaks[0]\n",
            "read again in the same function",
        ),
    ],
)
def test_kept_tensor_refusals(tmp_path: Path, body: str, why: str) -> None:
    path = tmp_path / "m.py"
    path.write_text(module_text(body))
    refused = patch_for(str(path), 6, "scalar_extraction")
    assert isinstance(refused, Refusal) and why in refused.reason


def test_two_patches_of_one_function_combine_into_one_edit() -> None:
    branch = patch_for(FILE, IF_LINE, "data_dependent_branch")
    kept = patch_for(FILE, TOLIST_LINE, "scalar_extraction")
    assert isinstance(branch, Patch) and isinstance(kept, Patch)
    both = combined_patch([branch, kept])
    assert isinstance(both, Patch) and both.kind == "combined"
    assert [(p.kind, p.line) for p in both.parts] == [
        ("tensor_branch", IF_LINE),
        ("kept_tensor", TOLIST_LINE),
    ]
    (edit,) = both.edits  # one function, as the file has it and as both parts leave it
    assert edit.before == branch.edits[0].before
    assert "torch.where(" in edit.after and ".detach()" in edit.after
    assert "if not keep.all()" not in edit.after
    assert both.hunks.count("\n-") == 3  # the `if`, its body, the `.tolist()` line
    summary = patch_summary(both)
    assert "`torch.where`" in summary and "keep `self.peaks` a tensor" in summary


def test_a_part_whose_line_an_earlier_part_rewrote_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(
        module_text(
            "        if x.sum() > 0:\n"
            "            self.peaks = x.amax(dim=0).tolist()\n"
            "        return x\n"
        )
    )
    inner = patch_for(str(path), 7, "scalar_extraction")
    assert isinstance(inner, Patch) and inner.kind == "kept_tensor"
    rewritten = Patch("tensor_branch", str(path), 6, inner.edits, inner.hunks)  # its lines change
    refused = combined_patch([inner, rewritten])
    assert isinstance(refused, Refusal)


def test_mapped_line_follows_unchanged_lines_only() -> None:
    old = ["a\n", "b\n", "c\n", "d\n"]
    new = ["a\n", "x\n", "y\n", "c\n", "d\n"]
    assert mapped_line(old, new, 1) == 1 and mapped_line(old, new, 3) == 4
    assert mapped_line(old, new, 2) is None


def plan_at(line: int) -> WhatIfPlan:
    return WhatIfPlan("patch", (), patch=Patch("side_effect", FILE, line, (), f"@{line}"))


def test_sets_are_pairs_and_all_and_past_four_all_only() -> None:
    three, why = patch_combinations([plan_at(n) for n in (3, 1, 2)])
    assert [[p.patch.line for p in group if p.patch] for group in three] == [
        [1, 2], [1, 3], [2, 3], [1, 2, 3]
    ]  # fmt: skip
    assert why is None
    many, why = patch_combinations([plan_at(n) for n in range(1, 7)])
    assert len(many) == 1 and why is not None and "6 patches" in why
    # one line's alternative form (torch.cond beside torch.where) is not a second patch
    alt = WhatIfPlan("patch", (), patch=Patch("tensor_cond", FILE, 1, (), "@cond"))
    assert patch_combinations([plan_at(1), alt]) == ([], None)


def test_a_single_patch_leads_over_a_set_it_ties_with() -> None:
    part = Patch("side_effect", FILE, 1, (), "")
    single = Action("patch", 0.10, (0.05, 0.15), measured=True, patch=part)
    both = Patch("combined", FILE, 1, (), "", parts=(PatchPart("a", 1), PatchPart("b", 2)))
    combined = Action("patch", 0.11, (0.06, 0.16), measured=True, patch=both)
    assert _first_of_ties([combined, single])[0] is single


@pytest.mark.usefixtures("eager_backend")
def test_the_set_is_planned_recorded_and_measured_on_a_real_target() -> None:
    workload = load_target(TARGET, "cpu")
    sites = captured_sites(TARGET)
    assert len(sites) == 2
    plans = what_if_plan(sites)
    combined = [p for p in plans if p.patch is not None and p.patch.kind == "combined"]
    # where and cond are both measured for the `if`; only the first form joins a set
    (plan,) = combined
    assert plan.patch is not None
    assert [p.kind for p in plan.patch.parts] == ["tensor_branch", "kept_tensor"]
    assert {t.id for t in plan.targets} == {s.id for s in sites}
    considered = plan_candidates(sites, plans)
    sets = [c for c in considered if c.kind == "patches"]
    assert sets and all(c.planned for c in sets)
    assert _label(sets[0]) == (
        f"patches together (tensor_branch line {IF_LINE} + kept_tensor line {TOLIST_LINE})"
    )
    reference = harness.eager_reference(workload, [])
    w = measure_what_if(workload, plan, reference, QUICK, "cpu", sites)
    assert w.status == "measured", w.error
    assert set(w.removed) == {s.id for s in sites} and not w.new_breaks
    assert w.knob == f"patch:combined@{IF_LINE}+{TOLIST_LINE}"


def test_a_break_is_decided_by_the_set_that_pays_not_its_own_patch_that_does_not() -> None:
    from tests.test_advise import run_advise, what_if

    own = Patch("tensor_branch", "/home/u/model.py", 11, (), "@own")
    both = Patch(
        "combined", "/home/u/model.py", 11, (), "@both",
        parts=(PatchPart("tensor_branch", 11), PatchPart("kept_tensor", 14)),
    )  # fmt: skip
    alone = what_if(
        knob="patch:tensor_branch@11", setting="tensor_branch", fix="rewrite", kind="patch",
        patch=own, saving_ms=0.001, saving_ci_ms=(-0.01, 0.012),
    )  # fmt: skip
    together = what_if(
        knob="patch:combined@11+14", setting="combined", fix="rewrite", kind="patch", patch=both
    )
    advice = run_advise(what_ifs=[alone, together])
    (entry,) = advice.breaks
    d = entry.decision
    assert d is not None and d.knob == "patch:combined@11+14" and d.basis == "measured"
    assert entry.verdict != "ignore"
    first = advice.actions[0]
    assert first.kind == "patch" and first.patch == both

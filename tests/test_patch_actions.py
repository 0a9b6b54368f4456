"""A measured patch among the actions: listed beside a knob that removes the same break, the
faster measured one first; never an action when it changed the output, still breaks, or failed
(the entry keeps its estimated code change); "no measurable effect" last; and only ever at the
user's own file. Synthetic records, no compile, no torch (see tests/test_advise.py's step:
0.1 ms, one print break B1)."""

from __future__ import annotations

import dataclasses

import pytest

from advisor.core.model import Action, FunctionEdit, Location, OutputCheck, Patch, WhatIf
from advisor.judge.actions import misplaced
from tests.test_advise import run_advise, what_if

FILE = "/home/u/model.py"


def patch(kind: str = "tensor_branch") -> Patch:
    edit = FunctionEdit("Model.forward", 9, 12, "def forward(x):\n", "def forward(x):\n")
    return Patch(kind, FILE, 11, (edit,), "@@ -11 +11 @@\n-a\n+b\n")


def patched(variant_ms: float, **kw: object) -> WhatIf:
    base: dict[str, object] = dict(
        knob="patch:tensor_branch@11",
        setting="tensor_branch",
        fix="rewrite",
        kind="patch",
        variant_ms=variant_ms,
        saving_ms=0.1 - variant_ms,
        saving_ci_ms=(0.1 - variant_ms - 0.005, 0.1 - variant_ms + 0.005),
        patch=patch(),
    )
    return what_if(**{**base, **kw})


def kinds(actions: tuple[Action, ...]) -> list[str]:
    return [a.kind for a in actions]


def test_knob_and_patch_both_listed_the_faster_first() -> None:
    knob = what_if(variant_ms=0.05, saving_ms=0.05, saving_ci_ms=(0.04, 0.06))
    advice = run_advise(what_ifs=[knob, patched(0.03)])
    assert kinds(advice.actions)[:2] == ["patch", "knob"]
    first = advice.actions[0]
    assert first.measured and first.patch == patch() and first.step_ms == pytest.approx(0.03)
    assert first.where == Location(FILE, 11, "Model.forward")
    assert "code" not in kinds(advice.actions)  # the patch is the code change, measured
    advice = run_advise(what_ifs=[knob, patched(0.07)])
    assert kinds(advice.actions)[:2] == ["knob", "patch"]


@pytest.mark.parametrize(
    "spoiled",
    [
        {"matches_eager": False, "output": OutputCheck(False, max_abs_diff=3.0)},
        {"new_breaks": (Location(FILE, 14, "forward", "if y:"),)},
        {"removed": ()},
        {"status": "failed", "error": "NotInstallable: forward is not loaded"},
    ],
    ids=["changes the output", "still breaks", "keeps the break", "failed"],
)
def test_a_spoiled_patch_is_never_an_action(spoiled: dict[str, object]) -> None:
    advice = run_advise(what_ifs=[patched(0.03, **spoiled)])
    assert "patch" not in kinds(advice.actions)
    (entry,) = advice.breaks
    assert entry.decision is not None and entry.decision.basis != "measured"


def test_a_patch_inside_the_noise_is_no_measurable_effect_and_last() -> None:
    advice = run_advise(what_ifs=[patched(0.099, saving_ci_ms=(-0.004, 0.006))])
    last = advice.actions[-1]
    assert last.kind == "patch" and not last.measurable
    assert all(a.measurable for a in advice.actions[:-1])


def test_a_patch_action_at_a_library_file_is_misplaced() -> None:
    advice = run_advise(what_ifs=[patched(0.03)])
    action = advice.actions[0]
    library = "/usr/lib/python3.11/site-packages/lib/x.py"
    moved = dataclasses.replace(action, where=Location(library, 11))
    assert misplaced((action,), advice.breaks) == []
    assert misplaced((moved,), advice.breaks)[0][1].startswith("a patch to a file")

"""Patches end to end on the scenarios, one per rewrite kind: the real capture's break gets a
patch what-if in the plan, the patch applies to the file with `git apply --check`, and the
patched function, installed in this process (the file untouched), no longer breaks there and
matches eager. A pattern no rewrite knows gets no patch; a break in library code never does.
Compiles use the eager backend (Dynamo's breaks do not depend on the backend); the timed,
replicated measurement is `benchmarks/patches.py`'s."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from advisor.core.model import BreakSite
from advisor.measure import harness
from advisor.measure.stages import WhatIfPlan, measure_what_if, what_if_plan
from advisor.measure.workload import load_target
from advisor.render.patch_files import work_tree
from advisor.render.view_patches import patch_file_text
from tests.support.eager_capture import QUICK, captured_sites, eager_backend  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = QUICK
pytestmark = pytest.mark.usefixtures("eager_backend")
PATCHED = {
    "print_logging": "side_effect",
    "scalar_bookkeeping": "scalar_bookkeeping",
    "data_dependent_branch": "tensor_branch",
    "loop_frame_skip": "tensor_branch",
    "moe_nonzero_routing": "mask_gather",
    "disabled_helper": "compile_boundary",
}
ALTERNATIVES = {"data_dependent_branch": ("tensor_cond",)}
UNPATCHED = ("item_in_decode_loop", "cold_path_check", "third_party_call")


def patch_plans(sites: tuple[BreakSite, ...]) -> list[WhatIfPlan]:
    return [p for p in what_if_plan(sites) if p.kind == "patch"]


@pytest.mark.parametrize("name", sorted(PATCHED))
def test_the_patch_applies_removes_the_break_and_matches_eager(name: str) -> None:
    sites = captured_sites(name)
    plans = patch_plans(sites)
    kinds = [p.patch.kind for p in plans if p.patch]
    # an if/else of assignments also gets its torch.cond form, measured beside the where
    assert kinds == [PATCHED[name], *ALTERNATIVES.get(name, ())]
    patch = plans[0].patch
    assert patch is not None and patch.file.startswith(str(ROOT / "scenarios"))
    if shutil.which("git") and (ROOT / ".git").exists():
        root = work_tree(patch.file)
        assert root is not None
        check = subprocess.run(
            ["git", "apply", "--check", "-"],
            input=patch_file_text(patch, root),
            cwd=root,
            capture_output=True,
            text=True,
        )
        assert check.returncode == 0, check.stderr
    workload = load_target(name, "cpu")
    reference = harness.eager_reference(workload, [])
    w = measure_what_if(workload, plans[0], reference, SETTINGS, "cpu", sites)
    assert w.status == "measured", w.error
    assert set(w.targets) <= set(w.removed), (w.removed, w.new_breaks)
    assert not w.new_breaks and w.output is not None and w.output.matches
    assert w.patch == patch and w.kind == "patch"


@pytest.mark.parametrize("name", UNPATCHED)
def test_no_patch_where_no_rewrite_knows_the_pattern(name: str) -> None:
    assert patch_plans(captured_sites(name)) == []

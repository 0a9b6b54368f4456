"""Every fix considered for a break is recorded when the what-ifs are planned (#59), measured or
skipped with why, and the report's break shows it; older records without them render as before."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from advisor.core.model import BreakSite, Candidate, Location
from advisor.core.taxonomy import Knob
from advisor.measure import candidates, stages
from advisor.measure.candidates import LIBRARY, NO_KNOB, plan_candidates
from advisor.measure.stages import what_if_plan
from advisor.render import search_words
from tests.support.reports import full_report
from tests.test_knob_combinations import dynamic_site, scalar_site


def branch_site(path: Path) -> BreakSite:
    path.write_text(
        "def f(x, out):\n    if x.sum() > 0:\n        out.append(x)\n    return x\n",
        encoding="utf-8",
    )
    return BreakSite(
        "B3", "GB0170", "Data-dependent branching", Location(str(path), 2, "f", "if x.sum() > 0:")
    )


def test_each_break_records_its_knob_patch_and_placements(tmp_path: Path) -> None:
    sites = (scalar_site(), dynamic_site(), branch_site(tmp_path / "user.py"))
    found = plan_candidates(sites, what_if_plan(sites))
    by = {(c.kind, c.sites, c.planned): c for c in found}
    assert ("knob", ("B1",), True) in by and ("knob", ("B2",), True) in by
    assert ("knobs", ("B1",), True) in by and ("knobs", ("B2",), True) in by
    # the branch: no knob for its kind, and the rewrite's own refusal
    assert by[("knob", ("B3",), False)].why == NO_KNOB
    refused = by[("patch", ("B3",), False)]
    assert "does more than assign (`out.append(x)`)" in refused.why
    placements = [c for c in found if c.kind == "placement"]
    assert {c.label for c in placements} == {"disable", "regional"}
    assert all(set(c.sites) == {"B1", "B2", "B3"} and c.planned for c in placements)


def test_a_library_break_says_why_no_patch_reaches_it() -> None:
    library = scalar_site(file="/x/site-packages/lib/core.py")
    found = plan_candidates((library,), what_if_plan((library,)))
    patch = next(c for c in found if c.kind == "patch")
    assert not patch.planned and patch.why == LIBRARY


def test_too_many_knobs_to_pair_is_said_once(monkeypatch: pytest.MonkeyPatch) -> None:
    knobs = [Knob(f"k{i}=True", f"k{i}", "true", "rewrite") for i in range(5)]
    sites = tuple(scalar_site(f"B{i + 1}") for i in range(5))
    lookup = {s.id: k for s, k in zip(sites, knobs, strict=True)}
    monkeypatch.setattr(stages, "knob_for", lambda site: lookup.get(site.id))
    skipped = [c for c in candidates._combination_skips(sites, []) if not c.planned]
    assert len(skipped) == 1 and "5 knobs" in skipped[0].why
    assert set(skipped[0].sites) == {s.id for s in sites}


def test_the_break_lists_what_was_measured_then_what_was_skipped() -> None:
    report = full_report()
    entry = report.breaks[0]
    assert search_words.considered(entry, report) is None  # a report from before: nothing
    report = dataclasses.replace(
        report,
        candidates=(
            Candidate((entry.id,), "knob", "capture_scalar_outputs=True", True),
            Candidate(
                (entry.id,), "patch", "rewrite", False, "no rewrite of the user's code applies"
            ),
            Candidate(("B99",), "knob", "other=True", True),
        ),
    )
    text = search_words.considered(entry, report)
    assert text == (
        "measured: `capture_scalar_outputs=True`; "
        "skipped: a patch (no rewrite of the user's code applies)"
    )

"""Every action names a line the user can act at, on real third-party models: saved measurements
of library-zoo models (tests/data/zoo, from a sweep of benchmarks/libzoo/libzoo.toml), judged here
without torch compiling anything. A library break reached through the user's loop, lambda or
helper gets a knob, a placement or a library change at the library line, never a code change at
the user's calling line."""

from __future__ import annotations

import dataclasses
import gzip
from pathlib import Path

import pytest

from advisor.core.artifacts import measurements_from_json
from advisor.core.model import Report
from advisor.core.paths import is_installed
from advisor.judge.actions import misplaced
from advisor.judge.pipeline import judge

DATA = Path(__file__).parent / "data" / "zoo"
MODELS = sorted(p.name.split(".")[0] for p in DATA.glob("*.measurements.json.gz"))


def judged(name: str) -> Report:
    text = gzip.decompress((DATA / f"{name}.measurements.json.gz").read_bytes()).decode()
    return judge(measurements_from_json(text))


def location_problems(report: Report) -> list[str]:
    """What is wrong with where the report's actions send the user (nothing, when right): an
    action `misplaced` flags; a code change at an installed (library) file; a library change at
    the user's own file; a code change that claims a library break."""
    problems = [f"{a.kind}: {why}" for a, why in misplaced(report.actions, report.breaks)]
    library = {e.id for e in report.breaks if is_installed(e.site.where.file)}
    for action in report.actions:
        where = action.where
        if action.kind in ("code", "isolate"):
            if where is None or is_installed(where.file):
                problems.append(f"{action.kind} at a library line {where}")
            if library & set(action.breaks):
                problems.append(
                    f"{action.kind} for library break(s) {sorted(library & set(action.breaks))}"
                )
        if action.kind == "upstream" and (where is None or not is_installed(where.file)):
            problems.append(f"upstream at the user's line {where}")
    return problems


def test_the_saved_zoo_models_hold_library_and_user_breaks() -> None:
    # the checks below are not vacuous: the data has breaks on both sides and library changes
    reports = [judged(name) for name in MODELS]
    assert len(MODELS) >= 6
    entries = [e for r in reports for e in r.breaks]
    assert sum(is_installed(e.site.where.file) for e in entries) >= 3
    assert sum(not is_installed(e.site.where.file) for e in entries) >= 1
    assert sum(a.kind == "upstream" for r in reports for a in r.actions) >= 2


@pytest.mark.parametrize("name", MODELS)
def test_every_action_names_a_line_the_user_can_act_at(name: str) -> None:
    assert location_problems(judged(name)) == []


@pytest.mark.parametrize("name", MODELS)
def test_a_library_breaks_entry_knows_it_is_a_library_break(name: str) -> None:
    for entry in judged(name).breaks:
        library = is_installed(entry.site.where.file)
        assert entry.decision is not None and entry.decision.library == library


def test_the_checks_catch_a_code_change_at_the_users_call_for_a_library_break() -> None:
    # the mistake this file guards against, planted: the library break reached through the
    # user's `x = layer(x)` sent to that line as a code change, or its library change there
    report = judged("user_layer_loop")
    (entry,) = report.breaks
    (upstream,) = [a for a in report.actions if a.kind == "upstream"]
    call = entry.site.reached_from
    for planted in (
        dataclasses.replace(upstream, kind="code", where=call),
        dataclasses.replace(upstream, where=call),
    ):
        actions = tuple(planted if a is upstream else a for a in report.actions)
        assert location_problems(dataclasses.replace(report, actions=actions)) != []


def test_a_library_break_through_the_users_loop_is_a_library_change_at_the_library_line() -> None:
    report = judged("user_layer_loop")
    (entry,) = report.breaks
    assert entry.site.reached_from is not None
    assert not is_installed(entry.site.reached_from.file)  # the user's `x = layer(x)`
    (upstream,) = [a for a in report.actions if a.kind == "upstream"]
    assert upstream.where == entry.site.where and is_installed(upstream.where.file)


def test_a_users_own_break_beside_library_breaks_is_removed_by_the_measured_knob() -> None:
    report = judged("user_eval_step")
    users = [e for e in report.breaks if not is_installed(e.site.where.file)]
    assert users, "the eval step's own confidence mask breaks"
    first = report.actions[0]
    assert first.kind in ("knob", "fullgraph") and first.measured
    assert {e.id for e in users} <= set(first.breaks) or first.kind == "fullgraph"


def test_a_default_compile_that_fails_says_run_it_eagerly_first() -> None:
    report = judged("ode_dopri5")
    assert report.actions[0].kind == "eager" and report.actions[0].fix == "compile_failed"

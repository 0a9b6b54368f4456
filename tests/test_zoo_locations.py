"""Every action names a line the user can act at, on real third-party models: saved measurements
of library-zoo models (tests/data/zoo, from a sweep of benchmarks/libzoo/libzoo.toml), judged here
without torch compiling anything. A library break reached through the user's loop, lambda or
helper gets a knob, a placement or a library change at the library line, never a code change at
the user's calling line."""

from __future__ import annotations

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


def test_the_saved_zoo_models_are_here() -> None:
    assert len(MODELS) >= 6


@pytest.mark.parametrize("name", MODELS)
def test_every_action_names_a_line_the_user_can_act_at(name: str) -> None:
    report = judged(name)
    assert misplaced(report.actions, report.breaks) == []
    for action in report.actions:
        if action.kind in ("code", "isolate"):
            assert action.where is not None and not is_installed(action.where.file)
        if action.kind == "upstream":
            assert action.where is not None and is_installed(action.where.file)


@pytest.mark.parametrize("name", MODELS)
def test_a_library_breaks_entry_and_its_action_agree(name: str) -> None:
    report = judged(name)
    for entry in report.breaks:
        library = is_installed(entry.site.where.file)
        assert entry.decision is not None and entry.decision.library == library
        mine = [a for a in report.actions if entry.id in a.breaks and a.kind in ("code", "isolate")]
        if library:
            assert mine == []


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

"""The reruns benchmark's reading of saved reports (`benchmarks.reruns`): action identity across
runs, interval coverage, the reference's variant for an action, the agreement check. No torch,
nothing measured: reports are built as records."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from advisor.core.model import Action, Location
from benchmarks import reruns
from benchmarks.reruns_render import render
from tests.support.reports import full_report


def _report(*actions: Action):  # type: ignore[no-untyped-def]
    return dataclasses.replace(full_report(), actions=actions)  # default median 0.5 ms


def _knob(
    saving: float,
    ci: tuple[float, float],
    measurable: bool = True,
    waves_ci: tuple[float, float] | None = None,
) -> Action:
    return Action("knob", saving, ci, measured=True, knob="capture_scalar_outputs=True",
                  measurable=measurable, processes=4, run_ci_ms=waves_ci)  # fmt: skip


def test_actions_are_the_same_across_runs_by_kind_and_what_they_change() -> None:
    where = Location("/a/b/model.py", 12, "f", "")
    assert reruns.action_key(_knob(0.1, (0.05, 0.15))) == "knob:capture_scalar_outputs=True"
    assert reruns.action_key(Action("patch", 0.1, where=where)) == "patch:model.py:12"
    assert reruns.action_key(Action("fullgraph", 0.1)) == "fullgraph"


def test_savings_are_read_as_shares_of_each_runs_own_default() -> None:
    measured = reruns.run_actions(_report(_knob(0.1, (0.05, 0.15)), Action("eager", 0.2)))
    assert list(measured) == ["knob:capture_scalar_outputs=True"]  # eager was not measured
    saving = measured["knob:capture_scalar_outputs=True"]
    assert saving["share"] == pytest.approx(0.2) and saving["ci_share"] == pytest.approx([0.1, 0.3])


def test_coverage_counts_ordered_pairs_of_measurable_actions() -> None:
    runs = [
        reruns.run_actions(_report(_knob(0.10, (0.08, 0.12), waves_ci=(0.09, 0.11)))),
        reruns.run_actions(_report(_knob(0.115, (0.11, 0.12), waves_ci=(0.112, 0.118)))),
        reruns.run_actions(_report(_knob(0.01, (-0.02, 0.04), measurable=False))),
    ]
    pairs = reruns.coverage(runs)
    # runs 0 and 1 are measurable, each against both others: 4 ordered pairs
    assert len(pairs) == 4
    by = {(p["run"], p["other"]): p for p in pairs}
    assert by[0, 1]["covered"] and not by[1, 0]["covered"] and not by[0, 2]["covered"]
    # run 0's interval [0.16, 0.24] covers run 1's 0.23; its waves' alone [0.18, 0.22] do not
    assert not by[0, 1]["covered_by_waves"] and by[0, 1]["run_ci_share"] == pytest.approx(
        [0.18, 0.22]
    )


def test_the_reference_measures_a_mode_or_a_knob_and_nothing_else() -> None:
    assert reruns.reference_variant("fullgraph") == "@fullgraph"
    assert reruns.reference_variant("eager") == "@eager"
    assert (
        reruns.reference_variant("knob:capture_scalar_outputs=True")
        == "@default+capture_scalar_outputs=true"
    )
    assert reruns.reference_variant("regional:model.layers") is None
    assert reruns.reference_variant("patch:model.py:12") is None


def test_agreement_is_within_a_quarter_or_inside_the_references_interval() -> None:
    reference = {"mean_share": 0.20, "ci95_share": [0.10, 0.40]}
    assert reruns.reference_check(0.24, reference) == {"within": True, "inside": True,
                                                       "error": pytest.approx(0.2)}  # fmt: skip
    far = reruns.reference_check(0.45, reference)
    assert far["within"] is False and far["inside"] is False
    wide = reruns.reference_check(0.35, reference)
    assert wide["within"] is False and wide["inside"] is True


def test_the_table_renders_the_summary_by_half() -> None:
    target = {
        "set": "libzoo", "name": "m", "half": "held-out", "runs": 2, "default_ms": [0.5, 0.6],
        "first_actions": ["fullgraph", "fullgraph"], "same_first": True, "first": "fullgraph",
        "actions": [{"fullgraph": {"share": 0.3, "ci_share": [0.2, 0.4]}}, {}],
        "coverage": [{"covered": True, "covered_by_waves": True}],
        "reference": {"action": "fullgraph", "mean_share": 0.28, "ci95_share": [0.2, 0.35]},
        "reference_checks": [{"run": 0, "share": 0.3, "within": True, "inside": True,
                              "error": 0.07}],
    }  # fmt: skip
    text = render({"machine": "here", "options": {"threads": 1}, "targets": {"m": target}})
    assert "Held-out half:\n- same first action in every run: 1 of 1 (100%) targets" in text
    assert "+30.0% [+20.0%, +40.0%]; -" in text and "within 25%" in text
    assert "moves from run to run" not in text  # no spread measured: no line
    steady = {"share_spread": {"pairs": 3, "run_sd": 0.0}}
    text = render({"machine": "here", "options": {}, "targets": {"m": target}, **steady})
    assert "by a standard deviation of 0.0% of the step" in text  # measured as none: shown


def test_the_run_level_spread_of_a_share_is_what_the_waves_do_not_explain() -> None:
    def runs(*shares: float) -> list[dict[str, dict[str, object]]]:
        # the waves' intervals of +-0.0318 with 4 processes: a standard error of 0.01 (the
        # advisor's own interval, wider, is not what it reads)
        return [{"k": {"share": s, "ci_share": [s - 1, s + 1], "processes": 4,
                       "run_ci_share": [s - 0.0318, s + 0.0318]}}
                for s in shares]  # fmt: skip

    steady = reruns.share_spread({"t": {"actions": runs(0.30, 0.30, 0.30)}})
    assert steady["pairs"] == 3 and steady["run_sd"] == 0.0
    moving = reruns.share_spread({"t": {"actions": runs(0.20, 0.30)}})
    # d^2 = 0.01, less two variances of 1e-4: sqrt((0.01 - 2e-4) / 2) = 0.07
    assert moving["run_sd"] == pytest.approx(0.07, abs=0.001)


def test_the_first_call_spread_is_pooled_over_actions_on_the_log_scale() -> None:
    def runs(*seconds: float | None) -> list[dict[str, dict[str, object]]]:
        return [{"k": {"first_call_s": s}} if s else {} for s in seconds]

    # e and 1: logs 1 and 0, sd 0.7071; an action in one run only counts for nothing
    spread = reruns.first_call_spread({
        "a": {"actions": runs(math.e, 1.0)},
        "b": {"actions": runs(2.0, 2.0, 2.0)},
        "c": {"actions": runs(3.0, None)},
    })  # fmt: skip
    # squares 0.5 (one degree of freedom) and 0 (two): sqrt(0.5 / 3)
    assert spread["actions"] == 2
    assert spread["log_sd"] == pytest.approx(math.sqrt(0.5 / 3))
    assert reruns.first_call_spread({}) == {"actions": 0, "log_sd": None}
    text = render({"machine": "here", "options": {"threads": 1}, "targets": {},
                   "first_call_spread": spread})  # fmt: skip
    assert "first call (compile) moves from run to run by a standard deviation of 40.8%" in text


def test_a_missing_or_malformed_manifest_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[targets]]\nname = "x"\n')  # a target without its set, half and target
    for manifest in (tmp_path / "missing.toml", bad):
        assert reruns.main(["--judge-only", "--manifest", str(manifest)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("benchmarks.reruns: ") and "\n" not in err


def test_corrupt_saved_results_are_one_line_and_exit_2_and_left_as_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "reruns.json"
    for text in ("{not json", "[1, 2]", '{"targets": [1]}'):
        saved.write_text(text)
        assert reruns.main(["--judge-only", "--out", str(tmp_path)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("benchmarks.reruns: ") and "\n" not in err
        assert saved.read_text() == text

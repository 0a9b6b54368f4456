"""The accuracy benchmark's judging of its cases (benchmarks/accuracy_cases.py and its Markdown):
errors raw and on shares, which cases are checked, the target, and whether a first action is
right. Synthetic records; nothing is compiled."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from advisor.core.model import Action, LatencyStats, Location, ModeResult, Report, WhatIf
from benchmarks.accuracy_cases import Case, first_action_judgement
from benchmarks.accuracy_render import render, summary_line, target_met
from tests.support.reports import full_report

LIBRARY_FILE = "/venv/lib/python3.11/site-packages/lib/flow.py"


def case(projected: float, measured: float, noise: float = 0.01, **kw) -> Case:  # type: ignore[no-untyped-def]
    base = dict(set="lib", name="m", projected_ms=projected, measured_ms=measured, noise_ms=noise)
    return Case(**{**base, **kw})


def test_errors_raw_and_on_shares_of_each_runs_own_median() -> None:
    c = case(0.6, 0.5, default_ms=2.0, reference_default_ms=2.5)
    assert c.error == pytest.approx(0.2)
    # projected 0.6 of 2.0 = 30%; measured 0.5 of 2.5 = 20%
    assert c.error_share == pytest.approx(0.5)
    assert c.checked and c.within is True
    assert case(0.9, 0.5).within is False


def test_a_saving_is_checked_when_its_interval_lies_above_zero() -> None:
    assert not case(0.1, 0.05, measured_ci_ms=(-0.01, 0.11)).checked
    wide_spread = case(0.06, 0.05, noise=0.04, measured_ci_ms=(0.03, 0.07))
    assert wide_spread.checked and wide_spread.within is True
    # Without an interval the spread decides: the saving above 3x of it.
    c = case(0.1, 0.05, noise=0.02)
    assert not c.checked and c.within is None
    assert case(0.1, -0.05).within is None


def test_the_target_on_shares_cancels_drift_between_the_two_runs() -> None:
    drifted = case(0.6, 0.3, default_ms=2.0, reference_default_ms=1.0)  # the reference ran 2x fast
    assert not target_met([drifted])[0] and target_met([drifted], on_shares=True)[0]
    assert drifted.within is False and drifted.within_share is True


def test_the_target_needs_four_in_five_within_and_none_beyond_half() -> None:
    four_in_five = [case(0.5, 0.5)] * 4 + [case(0.7, 0.5)]
    assert target_met(four_in_five)[0]
    assert not target_met([case(0.5, 0.5)] * 3 + [case(0.7, 0.5)] * 2)[0]
    assert not target_met([case(0.5, 0.5)] * 9 + [case(0.8, 0.5)])[0]  # +60% worst
    assert not target_met([case(0.1, 0.05, noise=0.05)])[0]  # nothing checked


def test_the_summary_counts_halves_and_first_actions() -> None:
    cases = [
        case(0.5, 0.5, half="tuning", first_action="knob", first_action_ok=True),
        case(0.9, 0.5, half="tuning", first_action="code", first_action_ok=False),
        Case("lib", "broken", "held-out", status="failed: ImportError"),
    ]
    line = summary_line("tuning", cases[:2])
    assert "2/2 ran" in line and "within 25% (raw ms) on 1/2 checked" in line
    assert "worst m +80%" in line and "first action right on 1/2" in line
    text = render(cases, None, "env")
    assert "**Target on raw ms NOT met**" in text and "## lib" in text
    assert "**Target on shares of each run's median NOT met**: no case" in text  # no medians
    assert "- held-out: 0/1 ran" in text


def report_with(first: Action, eager_ms: float = 1.0, **kw) -> Report:  # type: ignore[no-untyped-def]
    r = full_report()
    modes = tuple(
        dataclasses.replace(m, latency=dataclasses.replace(m.latency, median_ms=eager_ms))
        if m.mode == "eager" and m.latency
        else m
        for m in r.modes
    )
    return dataclasses.replace(r, modes=modes, actions=(first,), **kw)


def test_a_first_action_at_the_users_line_for_a_library_break_is_wrong() -> None:
    r = full_report()
    entry = r.breaks[0]
    lib_site = dataclasses.replace(
        entry.site,
        where=Location(LIBRARY_FILE, 44, "f", "nz = x.nonzero()"),
        reached_from=Location("/home/u/proj/demo.py", 9, "run", "y = t(x)"),
    )
    lib_entry = dataclasses.replace(entry, site=lib_site)
    at_user = Action("code", 0.03, breaks=("B1",), fix="rewrite", where=lib_site.reached_from)
    report = report_with(at_user, breaks=(lib_entry,))
    assert first_action_judgement(report, at_user, Case("lib", "m")) == (
        False,
        "a code change at a line that is not its break's",
    )
    upstream = Action("upstream", 0.03, breaks=("B1",), where=lib_site.where)
    assert first_action_judgement(report_with(upstream, breaks=(lib_entry,)), upstream,
                                  Case("lib", "m")) == (True, "")  # fmt: skip


def test_compiling_first_when_eager_is_faster_is_wrong() -> None:
    first = full_report().actions[0]  # isolate at the user's print: default 0.5 -> 0.467 ms
    ok, why = first_action_judgement(report_with(first, eager_ms=0.3), first, Case("lib", "m"))
    assert not ok and why == "eager is faster than the step after it"
    assert first_action_judgement(report_with(first, eager_ms=1.0), first, Case("lib", "m"))[0]


def test_a_first_action_measured_again_to_save_nothing_is_wrong() -> None:
    first = full_report().actions[0]
    nothing = Case("lib", "m", measured_ms=-0.001, measured_ci_ms=(-0.01, -0.0005))
    assert first_action_judgement(report_with(first), first, nothing) == (
        False,
        "measured again, it saves nothing",
    )


def test_nothing_to_fix_over_a_measured_win_is_wrong() -> None:
    keep = Action("keep", None)
    win = WhatIf("placement:regional", "regional", "placement", "measured", kind="regional",
                 saving_ms=0.1, saving_ci_ms=(0.05, 0.15), matches_eager=True)  # fmt: skip
    guards = dataclasses.replace(win, knob="skip_guard_eval_unsafe", kind="guards")
    ok, why = first_action_judgement(report_with(keep, what_ifs=(win,)), keep, Case("z", "m"))
    assert not ok and "placement:regional measured a saving" in why
    assert first_action_judgement(report_with(keep, what_ifs=(guards,), breaks=()), keep,
                                  Case("z", "m"))[0]  # fmt: skip


def test_an_unsafe_first_action_on_a_model_with_breaks_is_wrong() -> None:
    unsafe = Action("guards", 0.05, safe=False, step_ms=0.45)
    assert first_action_judgement(report_with(unsafe), unsafe, Case("z", "m")) == (
        False,
        "an unsafe action first on a model with breaks",
    )


def test_the_helpers_mode_change_keeps_the_others() -> None:
    r = report_with(Action("keep", None), eager_ms=0.7)
    eager = r.mode("eager")
    assert isinstance(eager, ModeResult) and isinstance(eager.latency, LatencyStats)
    assert eager.latency.median_ms == 0.7 and r.mode("default") == full_report().mode("default")


def test_the_placements_table_says_which_placement_beats_default() -> None:
    from benchmarks.placements import rows_of
    from tests.support.reports import measurements_of

    win = WhatIf(
        "placement:disable", "disable", "placement", "measured", kind="disable",
        baseline_ms=0.5, saving_ms=0.2, saving_ci_ms=(0.1, 0.3), matches_eager=True,
    )  # fmt: skip
    noisy = dataclasses.replace(win, kind="regional", saving_ci_ms=(-0.1, 0.5))
    m = dataclasses.replace(measurements_of(full_report()), what_ifs=(win, noisy))
    disable, regional = rows_of("demo", m)
    assert disable.step_ms == pytest.approx(0.3) and disable.beats_default
    assert disable.beats_eager  # 0.3 ms against eager 1.0 ms
    assert not regional.beats_default


def test_a_training_steps_passes_are_shown_from_its_ledger() -> None:
    from benchmarks.accuracy_cases import breaks_share, passes_of

    r = full_report()
    assert passes_of(r) == ""  # inference: no backward, no optimizer
    assert r.ledger is not None
    trained = dataclasses.replace(
        r, ledger=dataclasses.replace(r.ledger, backward_ms=0.2, optimizer_ms=0.05)
    )
    assert passes_of(trained) == "fwd 0.250 / bwd 0.200 / opt 0.050"
    assert breaks_share(r) == pytest.approx(0.035 / 0.5)
    text = render([case(0.5, 0.5, passes=passes_of(trained))], None, "env")
    assert "passes ms (default)" in text and "fwd 0.250" in text


def test_results_measured_apart_merge_into_one_table(tmp_path: Path) -> None:
    import json

    from benchmarks.accuracy import main
    from benchmarks.accuracy_cases import case_from_json, case_json

    scenario = Case("scenarios", "print_logging", projected_ms=0.05, measured_ms=0.04,
                    measured_ci_ms=(0.035, 0.045), noise_ms=0.002, default_ms=0.15,
                    reference_default_ms=0.15, first_action="isolate")  # fmt: skip
    library = Case("gpytorch", "gp_exact_predict", half="held-out", projected_ms=0.4,
                   measured_ms=0.38, noise_ms=0.01, default_ms=1.07,
                   reference_default_ms=1.05, first_action="eager")  # fmt: skip
    assert case_from_json(case_json(scenario)) == scenario
    for name, case in (("a", scenario), ("b", library)):
        (tmp_path / name).mkdir()
        payload = {"cases": [case_json(case)], "kbreaks": None, "wall_s": 60.0,
                   "load_average_at_start": [0.5, 0.5, 0.5]}  # fmt: skip
        (tmp_path / name / "accuracy.json").write_text(json.dumps(payload))
    out = tmp_path / "merged"
    assert main(["--merge", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out)]) == 0
    merged = json.loads((out / "accuracy.json").read_text())
    assert [c["name"] for c in merged["cases"]] == ["print_logging", "gp_exact_predict"]
    text = (out / "accuracy.md").read_text()
    assert "Merged from 2 runs" in text and "gpytorch" in text and "print_logging" in text
    assert "Target: within 25% (raw ms) on at least 80% of the checked cases" in text
    with pytest.raises(SystemExit):
        main(["--merge", str(tmp_path / "missing"), "--out", str(tmp_path / "other")])


def test_a_reference_that_fails_to_run_is_a_note_not_the_end_of_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from advisor.core.model import Settings
    from benchmarks import accuracy_cases

    report = full_report()
    assert report.actions and report.actions[0].saving_ms is not None

    def fails(*args: object, **kwargs: object) -> dict[str, object]:
        raise RuntimeError("Dynamo could not trace it")

    monkeypatch.setattr(accuracy_cases, "judge_saved", lambda path: report)
    monkeypatch.setattr(accuracy_cases, "remeasure", fails)
    case = accuracy_cases.model_case("lib", "m", "tuning", "t.py:build", {}, Settings(),
                                     Path("saved.json"), None)  # fmt: skip
    assert case.status == "ok" and case.measured_ms is None
    assert "measuring it again failed: RuntimeError: Dynamo could not trace it" in case.notes

"""What to do first, judged from measurements: placements, not compiling, nothing to fix, guard
skipping after every safe action, a side effect made a no-op, the projection bounded by what was
measured, and outputs judged against the default mode's own numerics. Synthetic records, worked
out by hand; no compile, no torch."""

from __future__ import annotations

import dataclasses

import pytest

from advisor.core.model import (
    Action,
    CodeUnit,
    Location,
    ModeResult,
    OutputCheck,
    Replication,
    WhatIf,
)
from advisor.judge.actions import misplaced
from advisor.judge.numerics import DEFAULT_DIFF_MULTIPLE, accepted
from advisor.render import prose
from advisor.render.view import displayer
from tests.support.reports import full_report
from tests.test_advise import mode, run_advise, site, what_if

# The synthetic step is 0.1 ms and its one break (a print, B1) is estimated at 0.028 ms.


def placement(kind: str, variant_ms: float, ci: tuple[float, float], **kw) -> WhatIf:  # type: ignore[no-untyped-def]
    units = {
        "regional": tuple(CodeUnit(f"model.layers.{i}", "Block") for i in range(3)),
        "disable": (CodeUnit("Model.trace", "trace", Location("/home/u/model.py", 20, "trace")),),
    }[kind]
    base = dict(
        knob=f"placement:{kind}",
        setting=kind,
        fix="placement",
        kind=kind,
        targets=("B1",),
        removed=("B1",),
        baseline_ms=0.1,
        variant_ms=variant_ms,
        saving_ms=0.1 - variant_ms,
        saving_ci_ms=ci,
        subjects=units,
    )
    return what_if(**{**base, **kw})


def test_a_measured_regional_placement_is_an_action_with_its_modules_and_step() -> None:
    advice = run_advise(what_ifs=[placement("regional", 0.06, (0.035, 0.045))])
    (action,) = [a for a in advice.actions if a.kind == "regional"]
    assert action.measured and action.step_ms == pytest.approx(0.06)
    assert [u.path for u in action.subjects] == [
        "model.layers.0",
        "model.layers.1",
        "model.layers.2",
    ]
    assert advice.actions[0] is action  # 0.06 ms beats the print's estimated 0.072 ms
    report = dataclasses.replace(full_report(), actions=advice.actions, ledger=advice.ledger)
    title = prose.action_title(action, report, displayer(report))
    assert "`model.layers[0..2]` (3 × Block) instead of the whole" in title
    assert "0.1000 → 0.0600 ms per call" in title


def test_a_placement_that_saves_nothing_beyond_noise_is_no_measurable_effect_and_last() -> None:
    advice = run_advise(what_ifs=[placement("disable", 0.099, (-0.004, 0.006))])
    shown = [a for a in advice.actions if a.kind == "disable"]
    assert len(shown) == 1 and not shown[0].measurable and advice.actions[-1] is shown[0]
    assert all(a.measurable for a in advice.actions[:-1])


def replicated(first_call_s: float) -> Replication:
    return Replication(processes=4, rounds=5, first_call_s=(first_call_s,) * 4)


def test_a_saving_a_rerun_would_not_reproduce_is_no_measurable_effect() -> None:
    # 5% of the step, its four waves tight around it: measured, as this run alone gives it;
    # a run-level spread of 3% of the step each way puts a rerun anywhere from about -3% to +13%
    tight = placement("disable", 0.095, (0.0045, 0.0055), process_savings_ms=(0.005,) * 4)
    (alone,) = [a for a in run_advise(what_ifs=[tight]).actions if a.kind == "disable"]
    assert alone.measurable and alone.saving_ci_ms == pytest.approx((0.0045, 0.0055))
    rerun = run_advise(what_ifs=[tight], run_spread=0.03).actions
    (shown,) = [a for a in rerun if a.kind == "disable"]
    assert not shown.measurable and shown is rerun[-1]
    low, high = shown.saving_ci_ms  # type: ignore[misc]
    assert low < 0 < 0.013 < high and shown.run_ci_ms == pytest.approx((0.0045, 0.0055))


def test_a_cheaper_first_call_never_drops_a_larger_saving() -> None:
    # #59: a first call enters through the break-even beside the saving, not the ranking
    leader = placement("regional", 0.06, (0.035, 0.045), replication=replicated(12.0))
    # saves 0.035 ms, its interval holds the leader's 0.04, and it compiles 4x faster: the
    # leader (the larger saving, the same scope of change) keeps its place
    close = placement("disable", 0.065, (0.02, 0.05), replication=replicated(3.0))
    actions = run_advise(what_ifs=[leader, close]).actions
    assert [a.kind for a in actions[:2]] == ["regional", "disable"]
    assert actions[0].first_call_s == 12.0
    # one whose interval stops short of the leader's saving keeps its place, however cheap
    apart = placement("disable", 0.065, (0.03, 0.038), replication=replicated(3.0))
    assert run_advise(what_ifs=[leader, apart]).actions[0].kind == "regional"


def knob_what_if(saving_ms: float, ci: tuple[float, float]) -> WhatIf:
    """The print's knob, measured in four processes with this saving and interval."""
    return what_if(
        variant_ms=0.1 - saving_ms,
        saving_ms=saving_ms,
        saving_ci_ms=ci,
        replication=replicated(4.0),
    )


def test_of_tied_actions_the_narrowest_change_leads_whichever_saved_more() -> None:
    # nf_spline in the held-out reruns campaign: a knob and fullgraph=True tie at ~42% of the
    # step; the run decided which saved the more, so each run led with the other
    placed = placement("disable", 0.06, (0.03, 0.05), replication=replicated(4.2))
    for knob_saving in (0.045, 0.035):  # ahead of the placement's 0.04, then behind it
        low, high = knob_saving - 0.01, knob_saving + 0.01
        actions = run_advise(what_ifs=[knob_what_if(knob_saving, (low, high)), placed]).actions
        assert [a.kind for a in actions[:2]] == ["disable", "knob"]
    # a placement the knob's interval leaves out is not a tie: the knob leads
    behind = placement("disable", 0.07, (0.025, 0.035), replication=replicated(4.2))
    assert run_advise(what_ifs=[knob_what_if(0.05, (0.04, 0.06)), behind]).actions[0].kind == "knob"
    # a tied placement whose compile is dearer still leads: its first call is its break-even
    dear = placement("disable", 0.06, (0.03, 0.05), replication=replicated(5.0))
    actions = run_advise(what_ifs=[knob_what_if(0.045, (0.035, 0.055)), dear]).actions
    assert actions[0].kind == "disable"


def test_a_variant_is_ranked_by_its_step_scaled_to_the_default_median() -> None:
    # The A/B's own baseline drifted to 0.2 ms: halving it puts the step at 0.05 ms here, and
    # its saving, in the same frame as the step, at 0.05 ms (the record keeps the raw 0.1 ms).
    drifted = placement("disable", 0.1, (0.09, 0.11), baseline_ms=0.2, saving_ms=0.1)
    advice = run_advise(what_ifs=[drifted])
    (action,) = [a for a in advice.actions if a.kind == "disable"]
    assert action.step_ms == pytest.approx(0.05) and action.saving_ms == pytest.approx(0.05)
    assert action.saving_ci_ms == pytest.approx((0.045, 0.055))
    assert drifted.saving_ms == 0.1


def test_run_eagerly_comes_first_when_compiling_loses_and_nothing_measured_recovers_it() -> None:
    # default 0.1 ms against eager 0.08: the print's rewrite is estimated to save 0.028 (a
    # projected 0.072, below eager), but nothing measured beats eager.
    advice = run_advise(eager=mode("eager", 0.08))
    assert [a.kind for a in advice.actions][:2] == ["eager", "isolate"]
    eager = advice.actions[0]
    assert eager.measured and eager.step_ms == pytest.approx(0.08)
    assert eager.saving_ms == pytest.approx(0.02)
    ledger = advice.ledger
    assert ledger is not None and ledger.projection_basis == "eager"
    assert ledger.projected_ms == pytest.approx(0.08)
    assert ledger.estimated_projected_ms == pytest.approx(0.072)
    report = dataclasses.replace(full_report(), actions=advice.actions, ledger=ledger)
    title = prose.action_title(eager, report, displayer(report))
    assert title.startswith("Do not compile `demo`: run it eagerly")
    assert "nothing measured recovers what compiling costs" in title


def test_a_measured_variant_faster_than_eager_goes_before_running_eagerly() -> None:
    regional = placement("regional", 0.05, (0.045, 0.055))
    advice = run_advise(eager=mode("eager", 0.08), what_ifs=[regional])
    # measured savings first, largest first: the estimated rewrite comes after both
    assert [a.kind for a in advice.actions] == ["regional", "eager", "isolate"]
    assert advice.ledger is not None and advice.ledger.projection_basis == "estimate"


def test_not_compiling_leads_only_where_no_compiled_arm_comes_near_it() -> None:
    # #59's signal chain: the knob measured the larger saving, its interval overlapping not
    # compiling's, whose first call is far cheaper: the knob leads
    eager = mode("eager", 0.08)
    bigger = run_advise(eager=eager, what_ifs=[knob_what_if(0.025, (0.012, 0.038))]).actions
    assert [a.kind for a in bigger[:2]] == ["knob", "eager"]
    assert bigger[0].first_call_s == 4.0
    # a knob a rerun could not tell from not compiling leads too, though it saved less here:
    # it is the narrower change
    close = run_advise(eager=eager, what_ifs=[knob_what_if(0.015, (0.008, 0.024))]).actions
    assert [a.kind for a in close[:2]] == ["knob", "eager"]
    # one whose interval leaves not compiling's saving out does not
    short = run_advise(eager=eager, what_ifs=[knob_what_if(0.012, (0.008, 0.016))]).actions
    assert [a.kind for a in short[:2]] == ["eager", "knob"]


def test_an_estimate_never_outranks_a_measurement() -> None:
    # the print's rewrite is estimated at 0.028 ms; a placement measured at 0.01 ms comes first
    small = placement("disable", 0.09, (0.006, 0.014))
    actions = run_advise(what_ifs=[small]).actions
    assert [(a.kind, a.measured) for a in actions[:2]] == [("disable", True), ("isolate", False)]
    assert actions[1].saving_ms is not None and actions[1].saving_ms > actions[0].saving_ms  # type: ignore[operator]


def test_eager_within_noise_of_the_default_mode_is_no_action() -> None:
    advice = run_advise(spread_ms=0.01, eager=mode("eager", 0.099, 0.01))
    assert not [a for a in advice.actions if a.kind == "eager"]


def guards(saving_ms: float) -> WhatIf:
    return what_if(
        knob="skip_guard_eval_unsafe=True", setting="torch.compiler.set_stance", fix="guards",
        kind="guards", targets=(), removed=(), variant_ms=0.1 - saving_ms, saving_ms=saving_ms,
        saving_ci_ms=(saving_ms * 0.8, saving_ms * 1.2),
    )  # fmt: skip


def test_skipping_guards_comes_after_every_safe_action_and_says_when_it_is_safe() -> None:
    # guards save 0.05 ms, more than the print's estimated 0.028: still after it
    advice = run_advise(what_ifs=[guards(0.05)])
    assert [a.kind for a in advice.actions] == ["isolate", "guards"]
    unsafe = advice.actions[-1]
    assert not unsafe.safe
    report = dataclasses.replace(full_report(), actions=advice.actions)
    title = prose.action_title(unsafe, report, displayer(report))
    assert "safe only while every call keeps the shapes, dtypes and Python values" in title


def break_free(**kw):  # type: ignore[no-untyped-def]
    """A model with no break: the same trace judged with no entry."""
    from advisor.core.artifacts import Capture
    from advisor.judge.advise import advise
    from advisor.judge.attribute import attribute
    from tests.test_advise import break_trace

    capture = Capture()
    modes = {"default": mode("default", 0.1), "eager": mode("eager", 0.3)}
    return advise(attribute(break_trace(), capture), capture, modes, tuple(kw.get("what_ifs", ())))


def test_a_break_free_model_says_nothing_to_fix_before_an_unsafe_saving() -> None:
    small = break_free(what_ifs=[guards(0.012)])
    assert [a.kind for a in small.actions] == ["keep", "guards"]
    report = dataclasses.replace(
        full_report(), breaks=(), actions=small.actions,
        modes=(mode("eager", 0.3), mode("default", 0.1)),
    )  # fmt: skip
    assert prose.action_title(small.actions[0], report, displayer(report)).startswith(
        "Nothing to fix: one graph, no break; compiled it runs 3.00x of eager"
    )
    large = break_free(what_ifs=[guards(0.03)])  # 30% of the step
    assert [a.kind for a in large.actions] == ["guards", "keep"]


def test_a_print_made_a_no_op_decides_its_entry_less_the_calls_own_time() -> None:
    # deleting the print measured 0.04 ms; moving it out keeps its own Python work (11 µs)
    noop = what_if(knob="noop:print", setting="noop", fix="delete", kind="noop", saving_ms=0.04,
                   saving_ci_ms=(0.035, 0.045))  # fmt: skip
    advice = run_advise(what_ifs=[noop])
    (entry,) = advice.breaks
    d = entry.decision
    assert d is not None and d.basis == "measured" and d.fix == "isolate"
    assert entry.parts.python_work_ms == pytest.approx(0.011)
    assert entry.cost_ms == pytest.approx(0.04 - 0.011)
    assert d.measured_ms == pytest.approx(0.04)
    (action,) = advice.actions
    assert action.kind == "isolate" and action.measured


def test_the_projection_is_not_below_a_measured_all_fixed_step() -> None:
    # fullgraph measured 0.09 ms, the estimate 0.072: the measurement bounds the projection
    advice = run_advise(fullgraph=mode("fullgraph", 0.09, 0.001), spread_ms=0.001)
    ledger = advice.ledger
    assert ledger is not None and ledger.projection_basis == "measured"
    assert ledger.projected_ms == pytest.approx(0.09)
    assert ledger.estimated_projected_ms == pytest.approx(0.072)
    assert ledger.measured_all_fixed_source == "fullgraph"


def test_outputs_within_the_default_modes_own_rounding_are_accepted() -> None:
    default = OutputCheck(False, 4.9e-4)
    assert accepted(OutputCheck(True, 1e-6), default)
    assert accepted(OutputCheck(False, 5.0e-4), default)
    assert accepted(OutputCheck(False, DEFAULT_DIFF_MULTIPLE * 4.9e-4), default)
    assert not accepted(OutputCheck(False, 1e-2), default)
    assert not accepted(OutputCheck(False, 1e-4, comparable=False), default)  # NaN, shape...
    assert not accepted(OutputCheck(False, 5e-4), OutputCheck(True, 0.0))
    assert accepted(None, default) is None


def test_fullgraph_differing_by_float_rounding_like_default_is_measured_truth() -> None:
    default = dataclasses.replace(
        mode("default", 0.1), matches_eager=False, output=OutputCheck(False, 4.9e-4)
    )
    fullgraph = dataclasses.replace(
        mode("fullgraph", 0.06), matches_eager=False, output=OutputCheck(False, 5.1e-4)
    )
    from advisor.core.artifacts import Capture
    from advisor.judge.advise import advise
    from advisor.judge.attribute import attribute
    from tests.test_advise import break_capture, break_trace

    capture = break_capture()
    modes = {"default": default, "fullgraph": fullgraph}
    advice = advise(attribute(break_trace(), capture), capture, modes)
    (action,) = [a for a in advice.actions if a.kind == "fullgraph"]
    assert action.max_abs_diff == pytest.approx(5.1e-4)
    assert action.default_abs_diff == pytest.approx(4.9e-4)
    report = dataclasses.replace(full_report(), actions=advice.actions, ledger=advice.ledger)
    assert "the default mode's by 0.00049" in prose.action_title(action, report, displayer(report))
    # a real change of behaviour still fails
    broken = dataclasses.replace(fullgraph, output=OutputCheck(False, 5.1e-4, comparable=False))
    modes = {"default": default, "fullgraph": broken}
    again = advise(attribute(break_trace(), capture), capture, modes)
    assert not [a for a in again.actions if a.kind == "fullgraph"]
    del Capture


def test_every_action_names_a_line_the_user_can_change() -> None:
    lib = site(file="/venv/lib/python3.11/site-packages/lib/flow.py",
               reached_from=Location("/home/u/flow.py", 44, "f", "y = t(x)"))  # fmt: skip
    advice = run_advise(lib)
    keep, action = advice.actions
    # only an estimated library change is left: keeping it as it is leads, the change after it
    assert keep.kind == "keep" and keep.unmeasured == "library"
    assert action.kind == "upstream" and action.where == lib.where
    mine = run_advise(site())
    assert [(a.kind, a.where) for a in mine.actions] == [("isolate", site().where)]


def test_a_library_break_a_no_op_removes_is_still_a_library_change_not_a_code_change() -> None:
    lib = site(file="/venv/lib/python3.11/site-packages/lib/flow.py",
               reached_from=Location("/home/u/flow.py", 44, "f", "y = t(x)"))  # fmt: skip
    advice = run_advise(lib, what_ifs=[what_if(knob="noop:print", fix="isolate", kind="noop")])
    kinds = {a.kind: a for a in advice.actions}
    assert "code" not in kinds and "isolate" not in kinds
    upstream = kinds["upstream"]
    assert upstream.where == lib.where and upstream.measured
    assert misplaced(advice.actions, advice.breaks) == []


def test_misplaced_finds_each_kind_of_wrong_line() -> None:
    lib = site(file="/venv/lib/python3.11/site-packages/lib/flow.py",
               reached_from=Location("/home/u/flow.py", 44, "f", "y = t(x)"))  # fmt: skip
    (entry,) = run_advise(lib).breaks
    user_line = lib.reached_from
    wrong = (
        Action("code", 0.01, breaks=("B1",), fix="rewrite", where=user_line),
        Action("isolate", 0.01, breaks=("B1",), fix="isolate", where=lib.where),
        Action("upstream", 0.01, breaks=("B1",), where=user_line),
        Action("regional", 0.01, breaks=("B1",)),
    )
    found = [why for _, why in misplaced(wrong, (entry,))]
    assert found == [
        "a code change at a line that is not its break's",
        "a code change at a library line",
        "a library change at a line that is not library code",
        "a placement with nothing to place",
    ]
    right = (Action("upstream", 0.01, breaks=("B1",), where=lib.where), Action("knob", 0.01))
    assert misplaced(right, (entry,)) == []


def test_a_moved_mode_keeps_its_latency() -> None:
    # sanity of the helpers used above
    m = mode("eager", 0.08)
    assert isinstance(m, ModeResult) and m.latency is not None and m.latency.median_ms == 0.08


def test_a_disable_title_names_the_users_functions_then_counts_the_librarys() -> None:
    lib = "/venv/lib/python3.11/site-packages/pyro/poutine/messenger.py"
    mine = CodeUnit("model_fn", "model_fn", Location("/home/u/model.py", 20, "model_fn"))
    theirs = [CodeUnit(f"Messenger.f{i}", f"f{i}", Location(lib, i, f"f{i}")) for i in range(6)]
    units = (mine, *theirs)
    advice = run_advise(what_ifs=[placement("disable", 0.06, (0.035, 0.045), subjects=units)])
    (action,) = [a for a in advice.actions if a.kind == "disable"]
    report = dataclasses.replace(full_report(), actions=advice.actions, ledger=advice.ledger)
    title = prose.action_title(action, report, displayer(report))
    assert title.startswith("Run `model_fn` (")
    assert "and the library functions `Messenger.f0`" in title
    assert "and 2 more (report.json lists them)" in title
    assert title.count("library code: wrap it where you set up the model") == 1


def test_where_default_compile_fails_the_first_action_is_to_run_eagerly() -> None:
    from advisor.core.model import ModeError
    from advisor.judge.pipeline import judge
    from tests.support.reports import measurements_of

    lib = "/venv/lib/python3.11/site-packages/solver/steps.py"
    error = ModeError("InductorError", "LoweringException: aten._unique2\nat", file=lib, line=232)
    failed = ModeResult("default", "failed", error=error)
    saved = measurements_of(full_report())
    modes = tuple(failed if m.mode == "default" else m for m in saved.modes)
    report = judge(dataclasses.replace(saved, modes=modes))
    (action,) = report.actions
    assert (action.kind, action.fix, action.step_ms) == ("eager", "compile_failed", 1.0)
    title = prose.action_title(action, report, displayer(report))
    assert title.startswith(
        "Do not compile `demo`: default torch.compile fails here "
        "(InductorError: LoweringException: aten._unique2) at solver/steps.py:232"
    )
    assert "report it upstream with that line" in title


def test_the_numerics_note_says_why_a_variant_matches() -> None:
    from advisor.render.actions import numerics_note

    base = Action("fullgraph", 0.1, measured=True, matches_eager=True)
    rounding = dataclasses.replace(base, max_abs_diff=8.6e-6, default_abs_diff=8.6e-6)
    assert numerics_note(rounding) == (
        "its output differs from eager's by at most 8.6e-06, the default mode's by 8.6e-06: "
        "the same floating-point rounding"
    )
    own_exact = dataclasses.replace(base, max_abs_diff=9.5e-7, default_abs_diff=0.0)
    assert str(numerics_note(own_exact)).endswith("by 0: within the dtype's tolerance")
    assert numerics_note(dataclasses.replace(base, max_abs_diff=0.0, default_abs_diff=0.0)) is None


def test_a_training_break_in_torch_is_the_users_call_only_where_one_reaches_it() -> None:
    adam = "/venv/lib/python3.11/site-packages/torch/optim/adam.py"
    user_call = Location("/home/u/train.py", 82, "step", "opt.step()")
    reached = site(file=adam, gb_code="GB0098", code="func(", reached_from=user_call)
    advice = run_advise(reached)
    assert advice.breaks[0].decision is not None and not advice.breaks[0].decision.library
    assert [a.where for a in advice.actions if a.kind != "guards"] == [user_call]
    # A frame torch enters on its own (a fused optimizer it will not trace): no user line holds
    # the call, so the action is a library change at torch's line, never a change there.
    alone = site(file=adam, gb_code="GB0098", code="func(")
    advice = run_advise(alone)
    assert advice.breaks[0].decision is not None and advice.breaks[0].decision.library
    assert [a.kind for a in advice.actions] == ["keep", "upstream"]
    assert misplaced(advice.actions, advice.breaks) == []


def test_breaks_all_too_small_to_fix_say_nothing_worth_fixing_first() -> None:
    advice = run_advise(share=0.3)  # the print saves 28% of the step: under a 30% threshold
    assert [e.verdict for e in advice.breaks] == ["ignore"]
    assert [a.kind for a in advice.actions] == ["keep"]
    report = dataclasses.replace(full_report(), breaks=advice.breaks, actions=advice.actions)
    assert prose.action_title(advice.actions[0], report, displayer(report)).startswith(
        "Nothing worth fixing: each break saves too little to act on"
    )


def test_an_estimate_of_skipping_guards_never_leads_a_measured_one_can() -> None:
    from advisor.core.model import Action
    from advisor.judge.actions import _place_guards
    from advisor.judge.decide import Step

    step = Step(median_ms=0.1, noise_ms=0.0, threshold_ms=0.0, min_effect_ms=0.0)
    keep = Action("keep", 0.0, measured=True)
    estimated = Action("guards", 0.05, safe=False)
    assert [a.kind for a in _place_guards([keep], estimated, False, step)] == ["keep", "guards"]
    measured = dataclasses.replace(estimated, measured=True, saving_ci_ms=(0.04, 0.06))
    assert [a.kind for a in _place_guards([keep], measured, False, step)] == ["guards", "keep"]

"""`advisor check` and `advisor.testing`: the baseline round trip, each kind of finding on
hand-made reports, the GitHub format, exit codes, and one real run on a tiny target."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from advisor import check_cli
from advisor.cli import main
from advisor.core.model import (
    LatencyStats,
    Location,
    ModeError,
    ModeResult,
    RecompileAdvice,
    Report,
)
from advisor.gate.baseline import (
    Baseline,
    baseline_from_json,
    baseline_from_report,
    baseline_to_json,
)
from advisor.gate.check import Thresholds, check
from advisor.render import prose
from advisor.render.check import format_github, format_text, note_text
from advisor.render.view import displayer
from advisor.runner import RunResult
from tests.support.reports import full_report, measurements_of, print_entry

ROOT = "/home/u/proj"  # the folder of tests.support.reports.FILE
LIMITS = Thresholds(max_new_share=0.02, max_slowdown=0.10)


def with_mode(report: Report, mode: ModeResult) -> Report:
    return dataclasses.replace(
        report, modes=tuple(mode if m.mode == mode.mode else m for m in report.modes)
    )


def default_mode(report: Report, **changes: Any) -> ModeResult:
    mode = report.mode("default")
    assert mode is not None
    return dataclasses.replace(mode, **changes)


def with_entry(report: Report, **changes: Any) -> Report:
    (entry,) = report.breaks
    return dataclasses.replace(report, breaks=(dataclasses.replace(entry, **changes),))


def without_breaks(report: Report) -> Report:
    return dataclasses.replace(report, breaks=(), sites=())


def kinds(baseline: Baseline, report: Report, limits: Thresholds = LIMITS) -> list[str]:
    return [f.kind for f in check(baseline, report, limits, ROOT).findings]


# --- the baseline -----------------------------------------------------------------------------


def test_baseline_round_trip_and_content() -> None:
    baseline = baseline_from_report(full_report(), ROOT)
    text = baseline_to_json(baseline)
    assert baseline_from_json(text) == baseline
    data = json.loads(text)
    (brk,) = data["breaks"]
    assert (brk["gb_code"], brk["file"], brk["line"], brk["code"]) == ("GB0059", "demo.py", 7,
                                                                        "print(x)")  # fmt: skip
    assert (brk["cost_share"], brk["verdict"]) == (0.066, "isolate")
    assert data["default"]["median_ms"] == 0.5
    assert data["default"]["noise"] == pytest.approx(0.05 / 0.5)  # IQR / median
    assert (data["default"]["recompiles"], data["fullgraph"]) == (1, "failed")
    assert len(text) < 2000  # small enough to commit and review


def test_installed_code_is_package_relative() -> None:
    report = full_report()
    site = dataclasses.replace(
        report.sites[0],
        where=Location("/venv/lib/python3.11/site-packages/transformers/x.py", 3, "f", "y"),
    )
    report = dataclasses.replace(report, sites=(site,), breaks=())
    (brk,) = baseline_from_report(report, ROOT).breaks
    assert (brk.file, brk.cost_share) == ("transformers/x.py", None)  # captured, not costed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not valid JSON"),
        ("{}", "not an advisor baseline"),
        ('{"baseline_version": 7}', "version 7 is not supported"),
        ('{"baseline_version": 1, "target": 3}', "malformed baseline"),
    ],
)
def test_bad_baselines(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        baseline_from_json(text)


# --- findings ---------------------------------------------------------------------------------


def test_same_report_is_not_worse() -> None:
    result = check(baseline_from_report(full_report(), ROOT), full_report(), LIMITS, ROOT)
    assert result.findings == () and not result.worse


def test_new_costly_break_names_line_and_recipe() -> None:
    baseline = baseline_from_report(without_breaks(full_report()), ROOT)
    result = check(baseline, full_report(), LIMITS, ROOT)
    (finding,) = result.findings
    assert (finding.kind, finding.place()) == ("new_break", ("demo.py", 7))
    (line,) = format_text(result, full_report())
    assert line.startswith("demo.py:7: new graph break GB0059") and "6.6%" in line
    assert line.endswith(
        "Fix: Move the print at demo.py:7 (`print(x)`) out of the compiled function (log after "
        "the call returns, or every N steps), or let Dynamo reorder it after the graph: "
        "`torch._dynamo.config.reorderable_logging_functions = {print}`."
    )


def test_the_fix_is_the_recipes_first_sentence_whatever_the_source_says() -> None:
    # A full stop and a capital inside the user's line do not end the recipe's sentence.
    report = full_report()
    (entry,) = report.breaks
    where = dataclasses.replace(entry.site.where, code='print("done. Next step")')
    site = dataclasses.replace(entry.site, where=where)
    report = dataclasses.replace(
        report, sites=(site,), breaks=(dataclasses.replace(entry, site=site),)
    )
    baseline = baseline_from_report(without_breaks(report), ROOT)
    (line,) = format_text(check(baseline, report, LIMITS, ROOT), report)
    assert line.endswith(
        'Fix: Move the print at demo.py:7 (`print("done. Next step")`) out of the compiled '
        "function (log after the call returns, or every N steps), or let Dynamo reorder it after "
        "the graph: `torch._dynamo.config.reorderable_logging_functions = {print}`."
    )


@pytest.mark.parametrize("category", [*prose.RECIPES, "library", "skipped"])
def test_recipe_first_sentence_opens_the_recipe(category: str) -> None:
    """The first sentence is the recipe's opening (after a skipped frame's lead), whole: it
    ends where the template's first sentence ends, not inside a parenthesis or `code`."""
    report = full_report()
    entry = print_entry()
    assert entry.decision is not None
    decision = dataclasses.replace(entry.decision, category=category)
    site = entry.site
    if category == "library":
        decision = dataclasses.replace(decision, category="third_party", library=True)
        where = Location("/venv/lib/python3.11/site-packages/lib/x.py", 3, "g", "y = z.f(x)")
        site = dataclasses.replace(site, where=where, reached_from=entry.site.where)
    if category == "skipped":
        decision = dataclasses.replace(decision, category="print")
        site = dataclasses.replace(site, skipped_frames=("0/0",), skip_code="GB7000")
    entry = dataclasses.replace(entry, site=site, decision=decision, what_if_knob=None)
    display = displayer(report)
    first = prose.recipe_first_sentence(entry, display)
    recipe = prose.recipe(entry, report, display).splitlines()
    opening = recipe[1] if category == "skipped" else recipe[0]
    assert first.endswith(".") and opening.startswith(first)
    assert opening == first or opening[len(first)] == " "
    assert "{" not in first.replace("{print}", "")  # every field filled in


def test_new_cheap_break_is_a_note() -> None:
    baseline = baseline_from_report(without_breaks(full_report()), ROOT)
    result = check(baseline, full_report(), Thresholds(max_new_share=0.07), ROOT)
    assert result.findings == ()
    notes = [note_text(n) for n in result.notes]
    assert any("new break GB0059" in n and "within the 7.0% allowed" in n for n in notes)


def test_removed_break_is_a_note() -> None:
    baseline = baseline_from_report(full_report(), ROOT)
    result = check(baseline, without_breaks(full_report()), LIMITS, ROOT)
    assert result.findings == ()
    assert [note_text(n) for n in result.notes] == [
        "demo.py:7: break GB0059 (Failed to trace builtin operator) is gone (`print(x)`)"
    ]


@pytest.mark.parametrize(("share", "worse"), [(0.066 + 0.021, True), (0.066 + 0.019, False)])
def test_known_break_that_costs_more(share: float, worse: bool) -> None:
    baseline = baseline_from_report(full_report(), ROOT)
    assert kinds(baseline, with_entry(full_report(), cost_share=share)) == (
        ["costlier_break"] if worse else []
    )


def test_moved_break_is_still_known() -> None:
    # Code was added above the print: same code, file and source, another line.
    baseline = baseline_from_report(full_report(), ROOT)
    report = full_report()
    (entry,) = report.breaks
    moved = dataclasses.replace(entry.site, where=dataclasses.replace(entry.site.where, line=9))
    report = dataclasses.replace(
        report, sites=(moved,), breaks=(dataclasses.replace(entry, site=moved),)
    )
    assert kinds(baseline, report) == []


@pytest.mark.parametrize(
    ("median", "iqr", "worse"),
    [
        (0.60, 0.05, True),  # +20%, noise 10%: beyond both
        (0.54, 0.05, False),  # +8%: within the 10% allowed
        (0.60, 0.15, False),  # +20% but the run's IQR is 25% of its median: noise
    ],
)
def test_slower_default_mode(median: float, iqr: float, worse: bool) -> None:
    baseline = baseline_from_report(full_report(), ROOT)
    latency = LatencyStats(median, iqr, 3, (median,) * 3)
    report = with_mode(full_report(), default_mode(full_report(), latency=latency))
    assert kinds(baseline, report) == (["slower"] if worse else [])


def _replicated_default(medians: tuple[float, ...], machine: tuple[float, ...]) -> Report:
    from advisor.core.model import Replication

    levels = tuple(m / x for m, x in zip(medians, machine, strict=True))
    rep = Replication(len(medians), 10, medians, tuple(range(len(medians))), None, (), (),
                      False, False, machine, levels)  # fmt: skip
    latency = LatencyStats(sorted(medians)[1], 0.01, 40, medians * 10, replication=rep)
    return with_mode(full_report(), default_mode(full_report(), latency=latency))


def test_a_replicated_check_reads_the_machine_out_of_a_slowdown() -> None:
    # the baseline made on a machine running at one speed, the check on one 1.4x slower: the
    # medians are 40% apart, the levels over the machine reference are not
    base_machine, slow_machine = (0.10, 0.11, 0.10, 0.105), (0.14, 0.15, 0.145, 0.14)

    def on(machine: tuple[float, ...], level: float, jitter: tuple[float, ...]) -> Report:
        medians = tuple(level * m * j for m, j in zip(machine, jitter, strict=True))
        return _replicated_default(medians, machine)

    jitter = (1.0, 1.02, 0.99, 1.01)
    baseline = baseline_from_report(on(base_machine, 5, jitter), ROOT)
    assert len(baseline.default.levels) == 4
    assert kinds(baseline, on(slow_machine, 5, jitter[::-1])) == []
    # the code 20% slower on the same slow machine: found, with its interval across processes
    worse = on(slow_machine, 6, jitter[::-1])
    (finding,) = check(baseline, worse, LIMITS, ROOT).findings
    assert finding.kind == "slower" and finding.interval is not None
    assert finding.change == pytest.approx(0.2, abs=0.03) and finding.interval[0] > 0
    assert "across processes" in format_text(check(baseline, worse, LIMITS, ROOT), worse)[0]


def test_new_recompiles_name_the_graph() -> None:
    report = full_report()
    baseline = baseline_from_report(with_mode(report, default_mode(report, recompiles=0)), ROOT)
    report = dataclasses.replace(
        report,
        recompiles=(RecompileAdvice("0/0", "f", "size mismatch at index 0", "size", 0, 0.3),),
    )
    result = check(baseline, report, LIMITS, ROOT)
    (finding,) = result.findings
    assert (finding.kind, finding.place()) == ("recompiles", ("demo.py", 5))
    assert format_text(result, report) == [
        "demo.py:5: 1 recompile(s) of the default mode, 0 in the baseline: 0/0 size mismatch at "
        "index 0"
    ]


def test_fullgraph_that_used_to_compile() -> None:
    report = full_report()
    compiled = ModeResult("fullgraph", "ok", 1.0, LatencyStats(0.4, 0.01, 3, (0.4,) * 3))
    baseline = baseline_from_report(with_mode(report, compiled), ROOT)
    result = check(baseline, report, LIMITS, ROOT)
    (finding,) = result.findings
    assert (finding.kind, finding.place()) == ("fullgraph", ("demo.py", 7))
    assert "[GB0059]" in format_text(result, report)[0]
    # and the other way round is good news, not a finding
    better = check(baseline_from_report(report, ROOT), with_mode(report, compiled), LIMITS, ROOT)
    assert better.findings == ()
    assert any("fullgraph=True compiles now" in note_text(n) for n in better.notes)


def test_default_mode_failing_or_wrong() -> None:
    report = full_report()
    baseline = baseline_from_report(report, ROOT)
    failed = default_mode(report, status="failed", latency=None, error=ModeError("E", "boom"))
    assert kinds(baseline, with_mode(report, failed)) == ["default_failed"]
    assert kinds(baseline, with_mode(report, default_mode(report, matches_eager=False))) == [
        "mismatch"
    ]


def test_uncosted_new_break_is_a_finding() -> None:
    baseline = baseline_from_report(without_breaks(full_report()), ROOT)
    report = dataclasses.replace(full_report(), breaks=())  # captured, but not profiled
    result = check(baseline, report, LIMITS, ROOT)
    (finding,) = result.findings
    assert finding.kind == "new_break" and "no measured cost" in format_text(result, report)[0]


def test_github_annotations() -> None:
    baseline = baseline_from_report(without_breaks(full_report()), ROOT)
    slower = LatencyStats(0.7, 0.01, 3, (0.7,) * 3)
    report = with_mode(full_report(), default_mode(full_report(), latency=slower))
    lines = format_github(check(baseline, report, LIMITS, ROOT), report)
    errors = [line for line in lines if line.startswith("::error")]
    assert len(errors) == 2
    assert errors[0].startswith(
        "::error file=demo.py,line=7,title=advisor check%3A new_break::new graph break GB0059"
    )
    assert errors[1].startswith("::error title=advisor check%3A slower::demo.py:f: default mode")
    assert all("\n" not in line for line in lines)


def test_github_escapes_data_and_properties() -> None:
    from advisor.gate.baseline import BaselineBreak
    from advisor.gate.check import CheckResult, NewBreak

    brk = BaselineBreak("GB1", "t", "a,b:c.py", 3, "f('50%')\nx", cost_share=0.5)
    (line,) = format_github(CheckResult((NewBreak(brk, 0.02, None),)), full_report())
    assert line == (
        "::error file=a%2Cb%3Ac.py,line=3,title=advisor check%3A new_break::new graph break GB1 "
        "(t) costs 50.0%25 of the step (limit 2.0%25): `f('50%25')%0Ax`"
    )


# --- the CLI ----------------------------------------------------------------------------------


def fake_measure(monkeypatch: pytest.MonkeyPatch, report: Report) -> list[str]:
    calls: list[str] = []

    def measure(args: Any, settings: Any) -> RunResult:
        calls.append(args.target)
        return RunResult(report, measurements_of(report))

    monkeypatch.setattr(check_cli, "_measure", measure)
    return calls


def test_cli_update_then_check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    target = full_report().workload.target
    baseline = tmp_path / "ci" / "baseline.json"
    fake_measure(monkeypatch, without_breaks(full_report()))
    assert main(["check", target, "--param", "size=3", "--baseline", str(baseline),
                 "--update-baseline"]) == 0  # fmt: skip
    written = baseline_from_json(baseline.read_text())
    assert written.breaks == () and written.target == target
    assert main(["check", target, "--param", "size=3", "--baseline", str(baseline)]) == 0
    capsys.readouterr()
    fake_measure(monkeypatch, full_report())
    assert main(["check", target, "--param", "size=3", "--baseline", str(baseline)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("/home/u/proj/demo.py:7: new graph break GB0059")
    assert "Fix: Move the print at demo.py:7" in out[0]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--baseline", "nowhere.json"], "baseline not found: nowhere.json"),
        (["--baseline", "bad.json"], "not valid JSON"),
        (["--baseline", "other.json"], "was recorded for target 'other.py:f'"),
        (["--baseline", "ok.json", "--max-new-share", "1.5"], "must be a share in [0, 1)"),
        (["--baseline", "ok.json", "--max-slowdown", "-1"], "must be zero or more"),
        (["--baseline", "ok.json", "--format", "xml"], "invalid choice"),
        (["--baseline", "ok.json"], "was recorded on cuda"),
    ],
)
def test_cli_bad_input_exits_2(
    argv: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    report = full_report()
    measured = fake_measure(monkeypatch, report)
    (tmp_path / "bad.json").write_text("{")
    on_gpu = dataclasses.replace(baseline_from_report(report, ROOT), device="cuda")
    (tmp_path / "ok.json").write_text(baseline_to_json(on_gpu))
    other = dataclasses.replace(on_gpu, target="other.py:f")
    (tmp_path / "other.json").write_text(baseline_to_json(other))
    assert main(["check", report.workload.target, "--param", "size=3", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("advisor: error:") and message in err[0]
    assert measured == (["demo.py:f"] if "cuda" in message else [])  # fails before measuring


@pytest.mark.parametrize("failure", ["parent_is_a_file", "replace_refused"])
def test_cli_baseline_that_cannot_be_written_is_one_line(
    failure: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    fake_measure(monkeypatch, full_report())
    baseline = tmp_path / "baseline.json"
    if failure == "parent_is_a_file":
        baseline.write_text("")
        baseline = baseline / "nested.json"
    else:
        baseline.write_text("old")

        def refuse(_src: object, _dst: object) -> None:
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr("advisor.core.files.os.replace", refuse)
    argv = ["check", "demo.py:f", "--param", "size=3", "--baseline", str(baseline)]
    assert main([*argv, "--update-baseline"]) == 2
    (err,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert err.startswith("advisor: error: cannot "), err
    if failure == "replace_refused":
        assert baseline.read_text() == "old"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["baseline.json"]


def test_the_gate_does_not_word_its_findings() -> None:
    """Sentences live in advisor.render: nothing under advisor/gate imports it."""
    import ast

    import advisor.gate

    for path in Path(advisor.gate.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not [n for n in names if n.startswith("advisor.render")], path.name


@pytest.mark.inductor
def test_end_to_end_check_on_a_tiny_target(tmp_path: Path) -> None:
    from tests.test_cli import ROOT as REPO
    from tests.test_cli import run_cli

    baseline = tmp_path / "baseline.json"
    quick = ["--repeats", "3", "--profile-calls", "3", "--no-what-if", "--budget", "5",
             "--processes", "2", "--target-ci", "0"]  # fmt: skip
    target = "tests/targets/tiny.py:factory"
    made = run_cli("check", target, "--baseline", str(baseline), "--update-baseline",
                   "--out", str(tmp_path / "report"), *quick)  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert sorted(p.name for p in (tmp_path / "report").iterdir()) == [
        "measurements.json", "report.html", "report.json", "report.md", "trace.json"
    ]  # fmt: skip
    data = json.loads(baseline.read_text())
    assert data["fullgraph"] == "failed" and data["target"] == target
    assert [(b["gb_code"], b["file"], b["line"]) for b in data["breaks"]] == [
        ("GB0059", "tests/targets/tiny.py", 8)  # relative to the folder check ran in
    ]
    # Pretend fullgraph used to compile: the fresh run's failure is then a finding, annotated
    # on the line that breaks it.
    data["fullgraph"] = "ok"
    baseline.write_text(json.dumps(data))
    # Loose limits elsewhere: on a busy machine the break's share and the speed move.
    checked = run_cli("check", target, "--baseline", str(baseline), "--format", "github",
                      "--max-slowdown", "100", "--max-new-share", "0.99", *quick)  # fmt: skip
    assert checked.returncode == 1, checked.stderr
    errors = [line for line in checked.stdout.splitlines() if line.startswith("::error")]
    assert len(errors) == 1 and errors[0].startswith(
        "::error file=tests/targets/tiny.py,line=8,title=advisor check%3A fullgraph::"
        "fullgraph=True compiled in the baseline and now fails [GB0059]"
    )
    assert str(REPO) not in checked.stdout


# --- advisor.testing --------------------------------------------------------------------------


def test_assert_no_costly_breaks_lists_breaks_with_recipes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from advisor import api, testing

    seen: dict[str, Any] = {}

    def fake_analyse(fn: Any, *args: Any, **options: Any) -> Report:
        seen.update(options, args=args)
        return full_report()

    monkeypatch.setattr(api, "analyse", fake_analyse)
    with pytest.raises(AssertionError) as failure:
        testing.assert_no_costly_breaks(print, 1, 2, max_share=0.02, repeats=5)
    message = str(failure.value)
    assert message.splitlines()[0] == (
        "demo: 1 graph break(s) cost more than 2.0% of the default-mode step"
    )
    assert "1. demo.py:7 GB0059 (Failed to trace builtin operator): 6.6% of the step" in message
    assert "Move the print at demo.py:7" in message
    assert seen == {"repeats": 5, "progress": False, "args": (1, 2)}
    report = testing.assert_no_costly_breaks(print, max_share=0.07)  # 6.6% is allowed
    assert report == full_report()


def test_assert_no_costly_breaks_when_default_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor import api, testing

    report = full_report()
    failed = default_mode(report, status="failed", error=ModeError("E", "cannot compile"))
    monkeypatch.setattr(api, "analyse", lambda *a, **k: with_mode(report, failed))
    with pytest.raises(AssertionError, match=r"default torch\.compile mode failed: cannot compile"):
        testing.assert_no_costly_breaks(print)

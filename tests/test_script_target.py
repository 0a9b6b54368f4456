"""The user's own script as the target (`advisor run script.py -- its args`): telling a script
from a factory file, the survey (every compiled callable, where, how often, how long), the
choice of what to measure, and the script's own failures: its traceback and exit code, one line
from the advisor, no advisor traceback."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from advisor.core.errors import AdvisorError
from advisor.core.model import Settings
from advisor.core.script import CompiledCallable, ScriptSurvey
from advisor.measure.script_survey import SURVEY_CALLS, survey_script
from advisor.measure.script_target import (
    ScriptFailed,
    is_script_target,
    measured_spec,
    planned,
    script_spec,
)
from tests.test_cli import ROOT, run_cli

SCRIPTS = ROOT / "tests" / "targets" / "scripts"


def _spec(name: str, *argv: str, **fields: object):  # type: ignore[no-untyped-def]
    spec = script_spec(str(SCRIPTS / name), tuple(argv))
    return dataclasses.replace(spec, cwd=str(ROOT), **fields)


def test_a_py_file_without_a_workload_factory_is_a_script(tmp_path: Path) -> None:
    factory = tmp_path / "factory.py"
    factory.write_text("def workload(device):\n    return (lambda x: x, (1,))\n")
    assert is_script_target(str(SCRIPTS / "two_callables.py"))
    assert not is_script_target(str(factory))  # the factory form, as before
    assert is_script_target(str(factory), ("--steps", "3"))  # script arguments: a script
    assert not is_script_target(f"{factory}:workload")
    assert not is_script_target("print_logging")


def test_the_survey_finds_every_compiled_callable_and_measures_the_hottest() -> None:
    survey = survey_script(_spec("two_callables.py"), budget_s=120)
    assert survey.ended in ("finished", "enough_calls"), survey
    by_name = {c.name: c for c in survey.callables}
    assert set(by_name) == {"Heavy", "light"}
    text = (SCRIPTS / "two_callables.py").read_text().splitlines()
    heavy, light = by_name["Heavy"], by_name["light"]
    assert heavy.kind == "torch.compile(module)" and light.kind == "torch.compile(fn)"
    assert "torch.compile(Heavy()" in text[heavy.site_line - 1]
    assert text[light.site_line - 1].startswith("@torch.compile")
    assert heavy.call_line == light.call_line  # both first called on the loop's line
    assert "light(heavy(x))" in text[heavy.call_line - 1]
    assert heavy.calls > 3 and heavy.total_s > light.total_s > 0
    assert not heavy.backward  # under no_grad: an inference loop
    chosen = planned(_spec("two_callables.py"), survey, Settings())
    assert chosen.hot is not None and chosen.hot.name == "Heavy"
    assert chosen.unit == "call" and chosen.at_call == 3
    by_line = planned(
        _spec("two_callables.py", pick=f"two_callables.py:{light.site_line}"), survey, Settings()
    )
    assert by_line.hot is not None and by_line.hot.name == "light"
    by_name_pick = planned(_spec("two_callables.py", pick="light"), survey, Settings())
    assert by_name_pick.hot is not None and by_name_pick.hot.name == "light"
    assert measured_spec(_spec("two_callables.py"), chosen).key == heavy.key
    with pytest.raises(AdvisorError, match=r"matches no compiled callable.*Heavy"):
        planned(_spec("two_callables.py", pick="nothing_here"), survey, Settings())


def test_flags_environment_dataloader_workers_and_sys_exit_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ADVISOR_TEST_SCALE", "2.0")
    # one epoch of 16 batches: fewer calls than the survey's stopping point, so it finishes
    survey = survey_script(_spec("loader_env.py", "--steps", "1"), budget_s=120)
    assert survey.ended == "finished" and survey.exit_code == 0, survey.stderr_tail
    assert survey.argv == ("--steps", "1")
    (score,) = survey.callables
    assert score.name == "score" and score.calls == 16
    assert "scored 16 batches" in survey.stdout_tail  # the script's output, kept apart
    longer = survey_script(_spec("loader_env.py", "--steps", "5"), budget_s=120)
    assert longer.ended == "enough_calls" and longer.exit_code is None  # stopped: enough seen
    assert longer.callables[0].calls == SURVEY_CALLS + 1


def test_too_few_iterations_for_a_loop_is_one_clear_line() -> None:
    hot = CompiledCallable(
        "Net",
        "module.compile()",
        "/x/train.py",
        9,
        calls=12,
        total_s=0.1,
        backward=True,
        between_s=0.1,
    )
    survey = ScriptSurvey("/x/train.py", ("--steps", "12"), ended="finished", callables=(hot,))
    spec = dataclasses.replace(_spec("two_callables.py"), path="/x/train.py")
    with pytest.raises(AdvisorError, match=r"calls Net 12 times.*more iterations"):
        planned(spec, survey, Settings())
    # 500 iterations of 10 ms: 2 per 20 ms block, 6 + 3 + 20 x 2 = 49 needed
    longer = dataclasses.replace(hot, calls=500, between_s=4.98)
    long_enough = dataclasses.replace(survey, callables=(longer,))
    assert planned(spec, long_enough, Settings()).unit == "iteration"


def test_a_script_that_raises_first_keeps_its_traceback_and_exit_code() -> None:
    with pytest.raises(ScriptFailed) as failed:
        planned(_spec("raises_early.py"), survey_script(_spec("raises_early.py"), 60), Settings())
    assert failed.value.exit_code == 1
    assert "ValueError: bad learning rate -1.0" in failed.value.stderr


@pytest.mark.parametrize(
    ("script", "argv", "code", "expected"),
    [
        (
            "raises_early.py",
            ["--lr", "0"],
            1,
            "raised ValueError: bad learning rate 0.0 (exit code 1) before",
        ),
        ("exits_early.py", [], 3, "exited with code 3 before any compiled call"),
        ("no_compile.py", [], 2, "never called torch.compile; it made the modules Net"),
        ("sleeps.py", [], 2, "ran past its budget"),
    ],
)
def test_script_failures_are_the_scripts_own(
    script: str, argv: list[str], code: int, expected: str
) -> None:
    timeout = ["--timeout", "3"] if script == "sleeps.py" else []
    proc = run_cli("run", f"tests/targets/scripts/{script}", *timeout, "--", *argv)
    assert proc.returncode == code, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("advisor: error: ") and expected in last, proc.stderr
    assert "advisor/" not in proc.stderr.replace(last, "")  # no advisor frames anywhere
    if script == "raises_early.py":
        assert "Traceback (most recent call last)" in proc.stderr  # the script's own
        # what it printed before it raised comes first, then its traceback
        printed = proc.stderr.index("checking the configuration: lr=0.0")
        assert printed < proc.stderr.index("Traceback (most recent call last)")
        assert "raises_early.py" in proc.stderr and "had not started measuring" in last
    if script == "no_compile.py":
        assert "train_step" in last and "--compile no_compile.py:Net" in last
    assert proc.stdout == ""  # the script's prints are not the advisor's output


def test_compile_names_what_a_script_without_torch_compile_should_compile() -> None:
    spec = _spec("no_compile.py", compile=("no_compile.py:Net",))
    survey = planned(spec, survey_script(spec, 60), Settings())
    assert survey.hot is not None and survey.hot.name == "Net" and survey.hot.kind == "--compile"
    assert survey.hot.calls == 5
    imported = _spec("no_compile.py", compile=("tests.support.compile.nothing_such",))
    with pytest.raises(AdvisorError, match="--compile"):
        planned(imported, survey_script(imported, 60), Settings())


def test_script_options_are_for_script_targets_only() -> None:
    proc = run_cli("run", "print_logging", "--callable", "x", "--quick")
    assert proc.returncode == 2
    assert "--callable: only for a script target" in proc.stderr
    proc = run_cli("run", "print_logging", "--", "--steps", "3")
    assert proc.returncode == 2 and "arguments after --" in proc.stderr


@pytest.mark.inductor
def test_the_python_api_takes_a_script_and_leaves_the_process_as_it_was() -> None:
    import sys

    import torch

    import advisor

    argv, main = list(sys.argv), sys.modules["__main__"]
    report = advisor.analyse_script(
        SCRIPTS / "two_callables.py",
        protocol="quick",
        what_if=False,
        repeats=3,
        budget_s=1.0,
        profile_calls=3,
        threads=1,
        progress=False,
    )
    assert report.script is not None and report.script.hot is not None
    assert report.script.hot.name == "Heavy" and report.script.unit == "call"
    assert {m.mode: m.status for m in report.modes}["default"] == "ok"
    assert sys.argv == argv and sys.modules["__main__"] is main
    assert torch.is_grad_enabled()  # the script paused inside its no_grad block


@pytest.mark.inductor
def test_check_takes_a_script_and_its_baseline_names_the_scripts_arguments(
    tmp_path: Path,
) -> None:
    baseline = tmp_path / "baseline.json"
    cheap = ["--quick", "--no-what-if", "--repeats", "3", "--budget", "1", "--profile-calls", "3"]
    target = "tests/targets/scripts/two_callables.py"
    made = run_cli("check", target, "--baseline", str(baseline), "--update-baseline", *cheap)
    assert made.returncode == 0, made.stderr
    assert json.loads(baseline.read_text())["params"] == [["argv", "[]"]]
    other = run_cli("check", target, "--baseline", str(baseline), *cheap, "--", "--steps", "3")
    assert other.returncode == 2
    assert "with argv=[]" in other.stderr and 'with argv=["--steps", "3"]' in other.stderr

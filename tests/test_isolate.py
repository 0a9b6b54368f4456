"""`--isolate`: a hang, a crash or a failure in one process is that mode's finding, and the
others are reported as usual. Most tests use a fake worker that starts in milliseconds
(tests/support/fake_worker.py); the last ones run the real worker."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path

import pytest

from advisor.core.artifacts import Capture, Measurements, ProfileTrace
from advisor.core.errors import AdvisorError
from advisor.core.model import BreakSite, Location, ModeError, ModeResult, Note, Report, Settings
from advisor.core.serial import message_from_json, message_to_json
from advisor.core.taxonomy import knob_for
from advisor.judge import judge, judge_partial
from advisor.measure import isolate
from advisor.measure.isolate import IsolatedRun, Task, TaskResult, measure_isolated
from advisor.measure.pipeline import MeasureInterrupted, RunOptions
from advisor.measure.stages import WhatIfPlan

ROOT = Path(__file__).resolve().parent.parent
FAKE_WORKER = ROOT / "tests" / "support" / "fake_worker.py"
TARGET = str(ROOT / "tests" / "targets" / "good.py") + ":factory"


def fake_command(request: Path, result: Path, faults: Path) -> list[str]:
    return [sys.executable, str(FAKE_WORKER), str(request), str(result), str(faults)]


def options(behave: dict[str, str], timeout_s: float | None = 30.0) -> RunOptions:
    settings = Settings(isolate=True, timeout_s=timeout_s, what_if=False)
    return RunOptions(TARGET, "cpu", settings, params=(("behave", behave),))


def measured(opts: RunOptions, progress=lambda _m: None) -> Measurements:  # type: ignore[no-untyped-def]
    return measure_isolated(opts, "cpu", progress, fake_command)


def run_isolated(opts: RunOptions, progress=lambda _m: None) -> Report:  # type: ignore[no-untyped-def]
    return judge(measured(opts, progress))


def modes_of(report) -> dict[str, tuple[str, str | None]]:  # type: ignore[no-untyped-def]
    return {m.mode: (m.status, m.error.type if m.error else None) for m in report.modes}


def test_a_hang_is_killed_at_the_timeout_and_the_other_modes_are_reported() -> None:
    report = run_isolated(options({"default": "hang"}, 1.0), lambda _m: None)
    assert modes_of(report) == {
        "eager": ("ok", None),
        "default": ("failed", "Timeout"),
        "fullgraph": ("ok", None),
    }
    error = report.mode("default").error
    assert error.message.startswith("timed out after 1 s (process group killed)")
    # the stack the worker dumped when asked says where it was
    assert error.file == str(FAKE_WORKER) and error.message.endswith("it was in wait_forever")
    assert report.mode("eager").latency.median_ms == 1.0


def test_a_segfault_is_a_crash_of_that_mode() -> None:
    report = run_isolated(options({"fullgraph": "segfault"}), lambda _m: None)
    assert modes_of(report)["fullgraph"] == ("failed", "Crash")
    assert modes_of(report)["default"] == ("ok", None)
    error = report.mode("fullgraph").error
    assert error.message.startswith("the process was killed by SIGSEGV")
    assert error.file == str(FAKE_WORKER)


def test_an_exit_without_a_result_is_a_crash_with_the_last_error_line() -> None:
    report = run_isolated(options({"default": "exit"}), lambda _m: None)
    error = report.mode("default").error
    assert (error.type, error.message) == (
        "Crash",
        "the process exited with code 1: RuntimeError: the backend gave up",
    )


def test_bad_input_found_by_the_eager_process_stops_the_run_as_in_process() -> None:
    with pytest.raises(AdvisorError, match="the workload fails in eager mode: RuntimeError: bad"):
        run_isolated(options({"eager": "error"}), lambda _m: None)


def test_when_eager_crashes_the_compiled_modes_are_skipped() -> None:
    report = run_isolated(options({"eager": "segfault"}), lambda _m: None)
    assert modes_of(report) == {
        "eager": ("failed", "Crash"),
        "default": ("skipped", "Skipped"),
        "fullgraph": ("skipped", "Skipped"),
    }


def test_a_what_if_that_hangs_is_a_failed_what_if() -> None:
    site = BreakSite(
        "B1", "GB0059", "Failed to trace builtin operator", Location("/x/m.py", 3, "f", "print(x)")
    )
    run = IsolatedRun(
        RunOptions(
            TARGET,
            "cpu",
            Settings(isolate=True, timeout_s=1.0),
            params=(("behave", {"what_if": "hang"}),),
        ),
        "cpu",
        lambda _m: None,
        fake_command,
    )
    run.modes.append(ModeResult("default", "ok"))
    run.capture = Capture(sites=(site,))
    run.trace = ProfileTrace("cpu", ())
    run.measure_what_ifs()
    # the knob for a print, then the print made a no-op, then the two placements: each hangs
    assert [w.kind for w in run.what_ifs] == ["knob", "noop", "disable", "regional"]
    assert run.what_ifs[0].knob == knob_for(site).name
    for what_if in run.what_ifs:
        assert (what_if.status, what_if.targets) == ("failed", ("B1",))
        assert what_if.error.startswith("Timeout: timed out after 1 s")


def test_ctrl_c_kills_the_running_process_and_keeps_the_modes_measured() -> None:
    started: list[str] = []

    def progress(message: str) -> None:
        started.append(message)
        if "default" in message:  # Ctrl-C a moment after the hanging process starts
            threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()

    # A shell starts background jobs with SIGINT ignored: Ctrl-C must reach this test all the same.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(MeasureInterrupted) as stop:
            measured(options({"default": "hang"}, None), progress)
    finally:
        signal.signal(signal.SIGINT, previous)
    report = judge_partial(stop.value.measurements)
    assert report.incomplete
    assert modes_of(report) == {"eager": ("ok", None), "fullgraph": ("ok", None)}


def test_frames_are_read_from_a_faulthandler_dump() -> None:
    dump = (
        "Fatal Python error: Segmentation fault\n\n"
        "Current thread 0x00007f (most recent call first):\n"
        '  File "/venv/lib/python3.11/site-packages/torch/x.py", line 5 in inner\n'
        '  File "/home/u/model.py", line 12 in forward\n'
        "\nExtension modules: numpy (total: 1)\n"
    )
    assert isolate.dumped_frames(dump) == [
        ("/venv/lib/python3.11/site-packages/torch/x.py", 5, "inner"),
        ("/home/u/model.py", 12, "forward"),
    ]
    error = isolate.crash_error("was killed by SIGSEGV", dump)
    assert (error.file, error.line) == ("/home/u/model.py", 12)  # the user's frame first
    assert error.message == "the process was killed by SIGSEGV; it was in forward"
    assert isolate.crash_error("x", "no dump here") == ModeError("Crash", "the process x")


def test_parameters_that_are_not_json_are_refused_before_measuring() -> None:
    with pytest.raises(AdvisorError, match="--isolate passes factory parameters as JSON"):
        isolate.params_json((("weights", object()),))


def test_tasks_and_results_survive_the_trip_through_json() -> None:
    site = BreakSite("B1", "GB0124", "Unsupported Tensor.item() call", Location("/m.py", 4))
    knob = knob_for(site)
    task = Task(
        "what_if",
        "t.py:f",
        json.dumps({"n": 2}),
        "cpu",
        Settings(repeats=4),
        WhatIfPlan("knob", (site,), knob=knob),
        (site,),
    )
    assert message_from_json(Task, message_to_json(task)) == task
    result = TaskResult("w", ModeResult("eager", "ok", 0.1), notes=(Note("x", "y", {"n": 1.0}),))
    assert message_from_json(TaskResult, message_to_json(result)) == result


def test_the_worker_writes_its_result_whole_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    """Bad input (a target file that is not there) is a result with the error, written whole
    beside the task (advisor.core.files.replace_atomically)."""
    import subprocess

    missing = str(ROOT / "tests" / "targets" / "missing.py") + ":factory"
    request = tmp_path / "task.json"
    request.write_text(message_to_json(Task("eager", missing, "{}", "cpu", Settings())))
    args = [str(tmp_path / name) for name in ("task.json", "result.json", "faults.txt")]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    worker = [sys.executable, "-m", "advisor.measure.isolated_worker", *args]
    proc = subprocess.run(worker, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = message_from_json(TaskResult, (tmp_path / "result.json").read_text())
    assert result.error is not None and "file not found" in result.error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["faults.txt", "result.json", "task.json"]


# --- the real worker ---------------------------------------------------------------------------


def measured_in_worker(task: Task) -> TaskResult:
    """The worker's measurement, through the JSON the parent would read."""
    from advisor.measure import torch_adapter
    from advisor.measure.isolated_worker import measure_task

    try:
        return message_from_json(TaskResult, message_to_json(measure_task(task)))
    finally:
        torch_adapter.reset_dynamo()


@pytest.mark.inductor
def test_the_worker_measures_each_task_and_the_parent_judges_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    # threads=1: the worker must hold it through the profile too (Dynamo guards on it)
    settings = Settings(repeats=3, budget_s=5.0, min_block_s=0.005, profile_calls=3, threads=1)
    tiny = "tests/targets/tiny.py:factory"
    eager = measured_in_worker(Task("eager", tiny, "{}", "cpu", settings))
    default = measured_in_worker(Task("default", tiny, "{}", "cpu", settings))
    assert default.capture is not None and default.trace is not None and default.mode is not None
    (site,) = default.capture.sites
    knob = knob_for(site)
    assert knob is not None
    sites = default.capture.sites
    plan = WhatIfPlan("knob", sites, knob=knob)
    what_if = measured_in_worker(Task("what_if", tiny, "{}", "cpu", settings, plan, sites))

    assert eager.mode is not None and what_if.what_if is not None
    assert default.environment is not None and default.environment.cpu_threads == 1
    info = isolate.workload_info(eager.name, RunOptions(tiny), "cpu")
    report = judge(
        Measurements(
            info,
            default.environment,
            settings,
            (eager.mode, default.mode),
            default.capture,
            default.trace,
            (what_if.what_if,),
        )
    )
    assert (site.gb_code, site.where.line) == ("GB0059", 8)
    assert [m.mode for m in report.modes] == ["eager", "default"]
    assert [b.site.gb_code for b in report.breaks] == ["GB0059"]
    assert report.what_ifs[0].status == "measured" and report.what_ifs[0].removed == (site.id,)
    assert report.attribution.calls
    assert not [w for w in report.warnings if w.kind == "unknown_regions"]
    assert report.breaks[0].occurrences_per_call == 1
    assert default.what_if is not None and default.what_if.fix == "guards"


@pytest.mark.inductor
def test_isolated_run_reports_a_segfault_in_the_default_mode(tmp_path: Path) -> None:
    import subprocess

    out = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "advisor",
            "run",
            "tests/targets/unruly.py:crashes_when_compiled",
            "--isolate",
            "--timeout",
            "300",
            "--out",
            str(out),
            "--repeats",
            "3",
            "--target-ci",
            "0",
            "--budget",
            "5",
            "--quiet",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "report.json").read_text())
    modes = {m["mode"]: m for m in data["modes"]}
    assert modes["eager"]["status"] == "ok" and modes["eager"]["latency"]["n"] == 3
    assert modes["fullgraph"]["status"] == "failed"
    assert modes["fullgraph"]["error"]["type"] != "Crash"  # fullgraph=True refuses the call
    crash = modes["default"]["error"]
    assert (modes["default"]["status"], crash["type"]) == ("failed", "Crash")
    assert crash["message"].startswith("the process was killed by SIGSEGV")
    assert crash["file"].endswith("tests/targets/unruly.py") and crash["line"] == 18
    assert data["settings"]["isolate"] is True and data["settings"]["timeout_s"] == 300
    assert "compile (default) failed (Crash at" in (out / "report.md").read_text()


def test_the_environment_is_the_workers_that_measured_not_the_parents() -> None:
    m = measured(options({}))
    assert m.environment.device_name == "worker-default"  # the default mode's worker
    assert [w.task for w in m.workers] == ["eager", "fullgraph", "default"]
    assert [w.environment.cpu_affinity for w in m.workers] == [(1,), (1,), (1,)]


def test_failed_and_skipped_modes_are_said_at_the_top_of_the_report() -> None:
    from advisor.render.markdown import render_markdown

    report = run_isolated(options({"eager": "segfault"}), lambda _m: None)
    md = render_markdown(report)
    assert f"- **warning:** eager failed (Crash at {FAKE_WORKER}:" in md
    assert "- **warning:** compile (default) skipped: not run: eager failed" in md
    assert "- **warning:** compile (fullgraph=True) skipped: not run: eager failed" in md

"""`advisor trace PATH...` on the files recorded from `tests/data/traces/tiny_job.py` (two
breaks: a data-dependent branch at line 25, a disabled helper called at line 27): the command
writes the report every run writes, its breaks at their lines, every saving marked estimated
with the `advisor run` command that would measure it; a log alone or a profile alone gives a
report that says what the other half would add; bad input is one line, exit 2, nothing
written."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.core.artifacts import measurements_from_json
from advisor.core.errors import AdvisorError
from advisor.core.options import FILES_PROTOCOL
from advisor.judge import judge
from advisor.measure.traces.measurements import measurements_from_files, read_files
from tests.data.traces.tiny_job import STEP_RECORD

DATA = Path(__file__).resolve().parent / "data" / "traces"
LOG_DIR = DATA / "torch_trace"
PROFILE = DATA / "profile_rank0.json"
PROFILE_GZ = DATA / "profile_rank0.json.gz"
BREAK_LINES = [25, 27]  # the branch, the call into the disabled helper
COMMAND = "advisor run YOUR_SCRIPT.py --callable tiny_step -- YOUR_ARGS"
REPORT_FILES = ("measurements.json", "report.json", "report.md", "report.html", "trace.json")


def _run(*argv: str | Path) -> tuple[int, str, str]:
    """`advisor ARGV` in this process: its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def _report(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "report.json").read_text(encoding="utf-8"))


def _longer_profile(folder: Path, steps: int = 8) -> Path:
    """The recorded profile as if the job had been profiled for more steps: its last step's
    events repeated after it. The recorded one has two active steps, whose spread is wider
    than either break's cost (both breaks are then `ignore`, within noise, and no action is
    left to check)."""
    data = json.loads(PROFILE.read_text(encoding="utf-8"))
    events = data["traceEvents"]
    last = next(e for e in events if e.get("name") == "ProfilerStep#3")
    start, end = last["ts"], last["ts"] + last["dur"]
    inside = [
        e for e in events if e.get("ph") == "X" and start <= e["ts"] and e["ts"] + e["dur"] <= end
    ]
    for k in range(1, steps):
        shift = k * (last["dur"] + 50.0)
        for event in inside:
            copy = {**event, "ts": event["ts"] + shift}
            if event is last:
                copy["name"] = f"ProfilerStep#{3 + k}"
            events.append(copy)
    path = folder / "profile_rank0.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _trace(folder: Path, *paths: Path) -> tuple[Path, str]:
    out = folder / "report"
    code, stdout, stderr = _run("trace", *paths, "--out", out)
    assert code == 0, stderr
    return out, stdout


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The recorded log and profile together: the report folder and what the console showed."""
    return _trace(tmp_path_factory.mktemp("both"), LOG_DIR, PROFILE)


@pytest.fixture(scope="module")
def longer(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The recorded log with a profile of more steps: breaks costed beyond noise, actions."""
    folder = tmp_path_factory.mktemp("longer")
    return _trace(folder, LOG_DIR, _longer_profile(folder))


# --- log and profile --------------------------------------------------------------------------


def test_writes_every_report_file(both: tuple[Path, str]) -> None:
    out, stdout = both
    assert all((out / name).is_file() for name in REPORT_FILES)
    assert stdout.startswith("advisor: tiny_step (from your run's files: every saving estimated)")


def test_breaks_at_their_lines_costed_from_the_profile(both: tuple[Path, str]) -> None:
    report = _report(both[0])
    breaks = report["breaks"]
    assert sorted(b["line"] for b in breaks) == BREAK_LINES
    assert {Path(b["file"]).name for b in breaks} == {"tiny_job.py"}
    assert {b["gb_code"] for b in breaks} == {"GB0170", "GB0098"}
    assert all(b["cost_ms"] > 0 for b in breaks)
    # estimated: no what-if ran, so each cost is the profile's estimate
    assert all(b["decision"]["basis"] == "estimate" and b["what_if"] is None for b in breaks)
    assert all("estimated saving" in b["why"] for b in breaks)
    assert report["ledger"]["step_ms"] > 0 and report["attribution"]["coverage"] > 0.9
    assert [g["compile_id"] for g in report["graphs"]] == ["0/0", "1/0", "2/0"]
    assert "every saving is an estimate" in (both[0] / "report.md").read_text(encoding="utf-8")


def test_every_saving_is_marked_estimated_with_the_command(longer: tuple[Path, str]) -> None:
    out, stdout = longer
    report = _report(out)
    saving = [a for a in report["actions"] if a["saving_ms"] is not None]
    assert saving and all(not a["measured"] for a in saving)
    assert all(a["unmeasured"] == FILES_PROTOCOL for a in saving)
    texts = " ".join(report["warning_texts"])
    assert "every saving here is estimated" in texts and COMMAND in texts
    assert "profiled steps (ProfilerStep#N)" in texts
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "read from your own run's files, nothing was run" in md and COMMAND in md
    first_actions = stdout.split("What to do first:")[1].split("\n\n")[0]
    assert "estimated" in first_actions and "tiny_job.py:25" in first_actions


def test_measurements_say_what_was_read(both: tuple[Path, str]) -> None:
    m = measurements_from_json((both[0] / "measurements.json").read_text(encoding="utf-8"))
    assert m.settings.protocol == FILES_PROTOCOL and not m.settings.what_if
    assert [mode.mode for mode in m.modes] == ["default"] and m.what_ifs == ()
    default = m.mode("default")
    assert default is not None and default.latency is not None
    assert m.trace is not None and m.trace.unprofiled_us == () and m.trace.calibration is None
    steps_ms = sorted(call.duration_us / 1e3 for call in m.trace.calls)
    assert sorted(default.latency.samples_ms) == pytest.approx(steps_ms)
    assert m.environment.torch.startswith("2.") and m.capture.torch_version == m.environment.torch
    assert m.workload.name == "tiny_step" and str(PROFILE) in m.workload.target


def test_rejudged_it_stays_an_estimate(both: tuple[Path, str], tmp_path: Path) -> None:
    code, _, stderr = _run("judge", both[0], "--out", tmp_path / "again", "--quiet")
    assert code == 0, stderr
    again = _report(tmp_path / "again")
    assert again["actions"] == _report(both[0])["actions"]


def test_user_step_record_gz_and_several_ranks(tmp_path: Path) -> None:
    """`--step NAME` reads the user's own step record; a gzipped profile reads the same; with
    two ranks' logs the lowest rank is judged and the note says so."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (log,) = LOG_DIR.glob("*.log")
    for rank in (0, 1):
        shutil.copy(log, logs / f"dedicated_log_torch_trace_rank_{rank}_x.log")
    inputs = read_files([str(logs), str(PROFILE_GZ)], step_name=STEP_RECORD)
    assert inputs.ranks == (0, 1) and inputs.log is not None and inputs.log.rank == 0
    m = measurements_from_files(inputs)
    assert {n.kind for n in m.notes} >= {"ranks_not_merged", "profiled_step_times"}
    report = judge(m)
    assert sorted(b.site.where.line for b in report.breaks) == BREAK_LINES
    with pytest.raises(AdvisorError, match="no profiler trace for rank 1"):
        read_files([str(logs), str(PROFILE)], rank=1)


# --- one half alone ---------------------------------------------------------------------------


def test_log_alone_names_the_breaks_and_says_a_profile_would_cost_them(tmp_path: Path) -> None:
    code, stdout, stderr = _run("trace", LOG_DIR, "--out", tmp_path / "r")
    assert code == 0, stderr
    report = _report(tmp_path / "r")
    assert report["breaks"] == [] and report["actions"] == []
    assert [s["where"]["line"] for s in report["sites"]] == BREAK_LINES
    assert any(t.startswith("no profiler trace") for t in report["warning_texts"])
    assert "Breaks captured, not costed" in stdout
    assert "Breaks captured, not costed" in (tmp_path / "r" / "report.md").read_text()


def test_profile_alone_gives_the_runtime_side_and_says_what_is_missing(tmp_path: Path) -> None:
    code, _, stderr = _run("trace", PROFILE, "--out", tmp_path / "r", "--quiet")
    assert code == 0, stderr
    report = _report(tmp_path / "r")
    assert report["ledger"]["step_ms"] > 0 and report["sites"] == []
    texts = " ".join(report["warning_texts"])
    assert "no TORCH_TRACE folder" in texts and "0/0, 1/0, 2/0" in texts
    # no break is known, so neither is "nothing to fix"
    assert all(a["kind"] != "keep" for a in report["actions"])


# --- bad input --------------------------------------------------------------------------------


def _other_run_profile(folder: Path) -> Path:
    """A profile whose only region is one the recorded log never compiled."""
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
         "ts": 0.0, "dur": 100.0},
        {"ph": "X", "cat": "cpu_op", "name": "Torch-Compiled Region: 9/0", "pid": 1, "tid": 1,
         "ts": 10.0, "dur": 50.0},
    ]  # fmt: skip
    path = folder / "other.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


BAD = {
    "missing path": (["nowhere"], "no such TORCH_TRACE folder or profiler trace: nowhere"),
    "folder without a log": (["{tmp}/empty"], "no TORCH_TRACE log (dedicated_log_torch_trace_"),
    "two folders": (["{log}", "{tmp}/empty"], "give one TORCH_TRACE folder (got "),
    "--step without a profile": (["{log}", "--step", "x"], "--step names the step's span"),
    "rank not in the files": (["{log}", "{profile}", "--rank", "3"], "for rank 3 (ranks in"),
    "no such step record": (["{profile}", "--step", "nope"], "no 'nope' span in profiler trace"),
    "not a profile": (["{tmp}/notes.txt"], "is not a Chrome trace"),
    "profile cut short": (["{tmp}/cut.json"], "(truncated?)"),
    "profile of another run": (["{log}", "{tmp}/other.json"], "ran no compiled region that"),
    "--out holds a report": (["{log}", "--out", "{tmp}/full"], "already holds report.json"),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_input_is_one_line_and_writes_nothing(case: str, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "report.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("hello")
    text = PROFILE.read_text(encoding="utf-8")
    (tmp_path / "cut.json").write_text(text[: len(text) // 2])
    _other_run_profile(tmp_path)
    argv, expected = BAD[case]
    paths = {"tmp": str(tmp_path), "log": str(LOG_DIR), "profile": str(PROFILE)}
    out = tmp_path / "out"
    extra = [] if "--out" in argv else ["--out", str(out)]
    code, stdout, stderr = _run("trace", *(a.format(**paths) for a in argv), *extra)
    assert code == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("advisor: error: "), stderr
    assert expected in lines[0]
    assert not out.exists() and stdout == ""
    assert sorted(p.name for p in (tmp_path / "full").iterdir()) == ["report.json"]

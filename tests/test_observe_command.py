"""`advisor observe SCRIPT.py [-- ARGS]` on `tests/targets/scripts/observed_loop.py` (a compiled
step with two breaks, a data-dependent branch at line 15 and a print at line 17, called 12 times):
the script runs once, leaving the files a user's own run leaves (a TORCH_TRACE log, a profile
of `--steps` calls after `--warmup` calls), and the report judged from them puts the breaks at
the script's lines, says the run was observed and what it cost; the script's own failure and a
run too short to profile are one line each, with nothing written."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.core.artifacts import measurements_from_json
from advisor.core.options import FILES_PROTOCOL
from tests.test_cli import ROOT, run_cli

SCRIPT = ROOT / "tests" / "targets" / "scripts" / "observed_loop.py"
BREAK_LINES = [15, 17]  # the branch, the print
REPORT_FILES = ("measurements.json", "report.json", "report.md", "report.html", "trace.json")


def _run(*argv: str | Path) -> tuple[int, str, str]:
    """`advisor ARGV` in this process: its exit code, stdout and stderr (the script's own
    output goes to the process's file descriptors, not here)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def _nothing_left(folder: Path) -> bool:
    """No report folder and no staging folder of the run's files."""
    return not any(folder.iterdir())


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """One observed run: its folder, the console summary and the advisor's stderr."""
    out = tmp_path_factory.mktemp("observed") / "report"
    code, stdout, stderr = _run("observe", SCRIPT, "--out", out, "--steps", "4")
    assert code == 0, stderr
    return out, stdout, stderr


def _report(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "report.json").read_text(encoding="utf-8"))


def test_the_run_leaves_the_standard_files_and_the_report(observed: tuple[Path, str, str]) -> None:
    out, stdout, stderr = observed
    logs = list((out / "torch_trace").glob("dedicated_log_torch_trace_*.log"))
    assert len(logs) == 1 and logs[0].stat().st_size > 0
    profile = json.loads((out / "profile_rank0.json").read_text(encoding="utf-8"))
    steps = [e for e in profile["traceEvents"] if e.get("name") == "advisor::observe_step"]
    assert len(steps) == 4
    assert all((out / name).is_file() for name in REPORT_FILES)
    assert not list(out.parent.glob(".advisor-observe-*"))  # the staging folder is gone
    assert stdout.startswith("advisor: step (from your run's files: every saving estimated)")
    assert "profiler on calls 4-7" in stderr and f"report written to {out}/" in stderr


def test_the_breaks_are_at_the_scripts_lines(observed: tuple[Path, str, str]) -> None:
    report = _report(observed[0])
    breaks = report["breaks"]
    assert sorted(b["line"] for b in breaks) == BREAK_LINES
    assert {Path(b["file"]).name for b in breaks} == {"observed_loop.py"}
    assert all(b["cost_ms"] is not None and b["cost_ms"] >= 0 for b in breaks)
    assert report["ledger"]["step_ms"] > 0


def test_the_report_says_it_was_observed_and_what_it_cost(
    observed: tuple[Path, str, str],
) -> None:
    out = observed[0]
    m = measurements_from_json((out / "measurements.json").read_text(encoding="utf-8"))
    assert m.settings.protocol == FILES_PROTOCOL
    assert m.workload.name == "step" and "observed_loop.py" in m.workload.target
    assert m.trace is not None and len(m.trace.calls) == 4
    note = next(n for n in m.notes if n.kind == "observed_run")
    assert note.values["steps"] == 4 and note.values["warmup"] == 3
    assert note.values["wall_s"] >= note.values["profile_s"] > 0
    assert note.values["steps_s"] > 0
    texts = " ".join(_report(out)["warning_texts"])
    assert "observed: your script ran once" in texts and "4 calls of step" in texts
    # the command that would measure the estimates names the script itself, not a placeholder
    assert f"advisor run {SCRIPT} --callable step" in texts and "YOUR_SCRIPT" not in texts


def test_a_script_that_raises_fails_as_itself_and_leaves_nothing(tmp_path: Path) -> None:
    proc = run_cli("observe", str(SCRIPT), "--out", str(tmp_path / "r"), "--", "--fail-after", "5")
    assert proc.returncode == 1, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last == (
        "advisor: error: observed_loop.py raised RuntimeError: the job failed at step 5 "
        "(exit code 1); nothing was written"
    )
    assert "Traceback (most recent call last)" in proc.stderr  # the script's own
    assert _nothing_left(tmp_path)


def test_too_few_calls_is_one_line_and_nothing_written(tmp_path: Path) -> None:
    code, _, stderr = _run("observe", SCRIPT, "--out", tmp_path / "r", "--", "--steps", "6")
    assert code == 2
    assert stderr.strip().splitlines()[-1] == (
        "advisor: error: observed_loop.py calls step 6 times; observing it needs 8 "
        "(--warmup 3 + --steps 5): lower them, or give the script more iterations (its own "
        "arguments go after --)"
    )
    assert _nothing_left(tmp_path)


def test_an_existing_profile_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "profile_rank0.json").write_text("{}", encoding="utf-8")
    code, _, stderr = _run("observe", SCRIPT, "--out", tmp_path)
    assert code == 2 and "already holds profile_rank0.json" in stderr
    assert [p.name for p in tmp_path.iterdir()] == ["profile_rank0.json"]

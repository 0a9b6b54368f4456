"""The CLI: bad input gets one line and a non-zero exit; one real end-to-end run with Inductor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.render.report_io import REPORT_FILES

ROOT = Path(__file__).resolve().parent.parent


def run_cli(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "tests/targets/missing.py:factory"], "file not found"),
        (["run", "tests/targets/syntax_error.py:factory"], "syntax error"),
        (["run", "tests/targets/good.py:nope"], "has no factory named 'nope'"),
        (["run", "tests/targets/good.py:raises"], "raised RuntimeError"),
        (["run", "tests/targets/good.py:non_callable"], "non-callable"),
        (["run", "tests/targets/good.py:wrong_shape"], "expected a Workload"),
        (["run", "tests/targets/good.py:eager_fails"], "fails in eager mode"),
        (["run", "no_such_scenario"], "unknown scenario"),
        (["run", "clean_mlp", "--repeats", "0"], "must be at least 1"),
        (["run", "clean_mlp", "--repeats", "-2"], "must be at least 1"),
        (["run", "clean_mlp", "--budget", "0"], "must be positive"),
        (["run", "clean_mlp", "--target-ci", "-0.01"], "must be a fraction"),
        (["run", "clean_mlp", "--target-ci", "2"], "must be a fraction"),
        (["compare", "a.json", "b.json", "--min-effect", "x"], "is not a number"),
        (["run", "clean_mlp", "--device", "tpu"], "unknown device"),
        (["show", "tests/targets/good.py"], "not valid JSON"),
        (["show", "nowhere.json"], "report not found"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_input_one_line(
    argv: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code != 0
    error_lines = [line for line in err.splitlines() if line.startswith("advisor: error:")]
    assert len(error_lines) == 1 and err.splitlines()[-1] == error_lines[0]
    assert message in error_lines[0]
    assert "Traceback" not in err


def test_cuda_without_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert main(["run", "clean_mlp", "--device", "cuda"]) == 2
    assert "no CUDA device" in capsys.readouterr().err


def test_subprocess_error_is_one_line() -> None:
    proc = run_cli("run", "tests/targets/good.py:raises")
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    # progress lines may come first (the factory runs in the profile's process); the error is
    # one line, the last, and no traceback
    assert lines[-1] == (
        "advisor: error: factory tests/targets/good.py:raises('cpu') raised "
        "RuntimeError: no weights here"
    )
    assert all(line.startswith("advisor: ") for line in lines)
    assert not any("Traceback" in line for line in lines)


def test_subprocess_debug_shows_traceback() -> None:
    proc = run_cli("run", "tests/targets/good.py:raises", "--debug")
    assert proc.returncode == 2
    assert "Traceback" in proc.stderr


def inductor_cache_dir() -> str:
    """Where Inductor caches compiled code in this process (it follows the temporary folder
    unless set)."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return cache_dir()


@pytest.mark.inductor
def test_end_to_end_run_show_and_no_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "run1"
    # CPU claims in a folder of this test's own, so that other advisor runs on the machine do
    # not decide which CPU this run pins to (the claims live under the temporary folder); the
    # compile cache stays where it is.
    own_claims = {"TMPDIR": str(tmp_path), "TORCHINDUCTOR_CACHE_DIR": inductor_cache_dir()}
    proc = run_cli(
        "run",
        "tests/targets/tiny.py:factory",
        "--out",
        str(out),
        "--repeats",
        "5",
        "--budget",
        "60",
        "--target-ci",
        "0",
        "--threads",
        "1",
        "--profile-calls",
        "5",
        "--quick",
        env=own_claims,
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(REPORT_FILES)
    data = json.loads((out / "report.json").read_text())
    modes = {m["mode"]: m for m in data["modes"]}
    assert modes["eager"]["status"] == "ok"
    assert modes["default"]["status"] == "ok"
    assert modes["default"]["matches_eager"] is True
    assert modes["default"]["latency"]["n"] == 5  # --target-ci 0: exactly --repeats rounds
    assert modes["default"]["latency"]["target_met"] is None
    assert data["environment"]["cpu_threads"] == 1  # --threads, read while measuring
    assert len(modes["default"]["latency"]["samples_ms"]) == 5
    assert modes["fullgraph"]["status"] == "failed"
    assert modes["fullgraph"]["error"]["gb_code"] == "GB0059"
    assert modes["fullgraph"]["error"]["line"] == 8
    assert "compile (default)" in proc.stdout
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html

    before = (out / "report.json").read_bytes()
    again = run_cli("run", "tests/targets/tiny.py:factory", "--out", str(out))
    assert again.returncode == 2
    assert "never overwritten" in again.stderr
    assert (out / "report.json").read_bytes() == before

    shown = run_cli("show", str(out / "report.json"), "--format", "md")
    assert shown.returncode == 0
    assert shown.stdout.startswith("# advisor report: tiny")

    # Judging the saved measurements again writes the report the run wrote.
    judged = run_cli("judge", str(out), "--out", str(tmp_path / "judged"), "--quiet")
    assert judged.returncode == 0, judged.stderr
    # The closing lines: the folder, then which file to open (each fits 80 columns beside a
    # short folder name).
    assert judged.stderr.splitlines()[-2:] == [
        f"advisor: report written to {tmp_path / 'judged'}/",
        "advisor: read report.html (or report.md); trace.json opens in ui.perfetto.dev",
    ]
    rejudged = json.loads((tmp_path / "judged" / "report.json").read_text())
    assert rejudged == data

    # --threads 1 pins the run to one CPU this process may use (none is claimed by another run
    # in the test's own claims folder). Which one depends on what else keeps a CPU busy at that
    # moment (the last idle one is taken: tests/test_harness.py checks that choice with the
    # load faked), so here only that it is one of them.
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("this platform cannot read a process's CPU affinity")
    affinity = data["environment"]["cpu_affinity"]
    assert len(affinity) == 1 and affinity[0] in os.sched_getaffinity(0)

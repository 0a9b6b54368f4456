"""Scripts end to end, in a subprocess as a user runs them: the breaks a script run reports are
the ones `TORCH_LOGS=graph_breaks` prints for the same script (same files and lines); the
example scripts (an inference loop and a decorated function; the Hugging Face training loop is
benchmarks/script_forms.py's) each give a report that names the script, its measured callable
and its unit. The quick protocol keeps these affordable; that the script
and factory forms agree under the replicated protocol is `benchmarks/script_forms.py`'s
measurement (reports/benchmarks/scripts/)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.test_cli import ROOT, inductor_cache_dir, run_cli

CHEAP = ("--quick", "--no-what-if", "--repeats", "3", "--budget", "1", "--profile-calls", "3")
BROKEN_AT = re.compile(r"Graph break .*in user code at (\S+):(\d+)")


def _torch_logs_breaks(script: Path, *argv: str) -> set[tuple[str, int]]:
    """(file, line) of each graph break `TORCH_LOGS=graph_breaks python SCRIPT` prints."""
    env = dict(os.environ, TORCH_LOGS="graph_breaks", PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, str(script), *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return {(m[1], int(m[2])) for m in BROKEN_AT.finditer(proc.stderr)}


def _advisor_report(tmp_path: Path, target: str, *script_args: str) -> dict[str, Any]:
    out = tmp_path / "run"
    env = {"TMPDIR": str(tmp_path), "TORCHINDUCTOR_CACHE_DIR": inductor_cache_dir()}
    args = ["run", target, *CHEAP, "--threads", "1", "--quiet", "--out", str(out)]
    proc = run_cli(*args, "--", *script_args, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""  # --quiet, and the script's prints are not the advisor's
    return json.loads((out / "report.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _sites(report: dict[str, Any]) -> set[tuple[str, int]]:
    return {(s["where"]["file"], s["where"]["line"]) for s in report["sites"]}


@pytest.mark.inductor
# One scenario (a training step with a print break: the iteration unit, the harder one); the
# call unit's breaks are checked on the examples below, at their `# graph-break` lines.
@pytest.mark.parametrize(("scenario", "unit"), [("train_print", "iteration")])
def test_a_scenario_run_as_a_script_reports_the_breaks_torch_logs_prints(
    tmp_path: Path, scenario: str, unit: str
) -> None:
    runner = ROOT / "scenarios" / "_as_script.py"
    logged = _torch_logs_breaks(runner, scenario, "--steps", "3", "--backend", "eager")
    assert logged, "TORCH_LOGS printed no break"
    report = _advisor_report(tmp_path, str(runner), scenario, "--steps", "400")
    assert _sites(report) == logged
    script = report["script"]
    assert script["unit"] == unit and script["argv"] == [scenario, "--steps", "400"]
    hot = script["callables"][script["measured"]]
    assert Path(hot["site_file"]).name == "_as_script.py"


def _marked(*files: str) -> set[tuple[str, int]]:
    """The lines of the example files that carry a `# graph-break` marker."""
    found = set()
    for name in files:
        path = ROOT / "examples" / "scripts" / name
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if line.rstrip().endswith("# graph-break"):
                found.add((str(path), number))
    return found


@pytest.mark.inductor
@pytest.mark.parametrize(
    ("example", "unit", "callable_name", "kind", "breaks_in"),
    [
        ("infer_loop", "call", "TextClassifier", "torch.compile(module)", ("models.py",)),
        # train_loop.py (a Hugging Face BERT step, iteration unit) is left to
        # benchmarks/script_forms.py: its Inductor training compiles took 2 minutes of the
        # suite, and the iteration unit is run end to end by the two training tests here.
        ("decorated", "call", "select_tokens", "torch.compile(fn)", ("decorated.py",)),
    ],
)
def test_each_example_script_runs_end_to_end(
    tmp_path: Path,
    example: str,
    unit: str,
    callable_name: str,
    kind: str,
    breaks_in: tuple[str, ...],
) -> None:
    script_path = ROOT / "examples" / "scripts" / f"{example}.py"
    report = _advisor_report(tmp_path, f"examples/scripts/{example}.py")
    script = report["script"]
    hot = script["callables"][script["measured"]]
    assert (hot["name"], hot["kind"], script["unit"]) == (callable_name, kind, unit)
    assert hot["call_file"] == str(script_path) and hot["calls"] > 3
    assert _sites(report) == _marked(*breaks_in)
    modes = {m["mode"]: m for m in report["modes"]}
    assert modes["eager"]["status"] == "ok" and modes["default"]["status"] == "ok"
    assert report["actions"], "no action"
    assert report["workload"]["target"] == f"examples/scripts/{example}.py"


@pytest.mark.inductor
def test_a_training_loop_fed_by_dataloader_workers_is_measured_in_arm_workers(
    tmp_path: Path,
) -> None:
    """The replicated protocol: every arm is the script in a worker process of its own, which
    starts its DataLoader's worker processes as `python script.py` would (fork, not the
    advisor's fork server; a worker that may have children)."""
    out = tmp_path / "run"
    env = {"TMPDIR": str(tmp_path), "TORCHINDUCTOR_CACHE_DIR": inductor_cache_dir()}
    args = [
        "run",
        "tests/targets/scripts/train_loader.py",
        "--processes",
        "2",
        "--repeats",
        "3",
        "--target-ci",
        "0",  # exactly --repeats rounds a wave: this checks the workers, not the timing
        "--no-what-if",
        "--profile-calls",
        "3",
        "--threads",
        "1",
        "--quiet",
        "--out",
        str(out),
    ]
    proc = run_cli(*args, "--", "--epochs", "40", env=env)
    assert proc.returncode == 0, proc.stderr
    # what the script prints, in the survey, the profile process and every arm's worker, stays
    # out of the advisor's terminal (the survey keeps its tail in the report)
    assert "TRAIN-LOADER BANNER" not in proc.stderr + proc.stdout
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert "TRAIN-LOADER BANNER" in report["script"]["stderr_tail"]
    script = report["script"]
    assert script["unit"] == "iteration" and script["argv"] == ["--epochs", "40"]
    hot = script["callables"][script["measured"]]
    assert hot["name"] == "Net" and hot["backward"] and hot["kind"] == "module.compile()"
    for mode in report["modes"]:
        assert mode["status"] == "ok", mode
        assert mode["latency"]["replication"]["processes"] >= 2

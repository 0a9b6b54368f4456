"""What the model-zoo surveys share (benchmarks/zoo/survey.py, benchmarks/libzoo/survey.py): the
Dynamo knobs they try, the rough eager timing, short paths for break sites, and the parent's side
of running one model per child process (its environment, its command line, and reading the
record it printed back).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import sysconfig
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# The Dynamo settings each survey tries on a model with breaks, by the label its table shows.
KNOBS: dict[str, dict[str, bool]] = {
    "scalar": {"capture_scalar_outputs": True},
    "dynamic": {"capture_dynamic_output_shape_ops": True},
    "both": {"capture_scalar_outputs": True, "capture_dynamic_output_shape_ops": True},
}
EAGER_CALLS = 10
WARMUP_CALLS = 2
SITE_PACKAGES = "site-packages" + os.sep


def median_ms(call: Callable[[], Any], calls: int = EAGER_CALLS) -> float:
    """The median wall time of `calls` calls, in ms, after WARMUP_CALLS untimed ones."""
    for _ in range(WARMUP_CALLS):
        call()
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


@contextmanager
def knobs_set(settings: Mapping[str, bool]) -> Iterator[None]:
    """One KNOBS label's Dynamo settings, set while inside (through the torch adapter)."""
    from advisor.measure import torch_adapter as ta

    with ExitStack() as stack:
        for name, value in settings.items():
            stack.enter_context(ta.dynamo_config_patch(name, value))
        yield


def short_path(file: str) -> str:
    """A path relative to its package root (`transformers/models/...`), this repository, or the
    standard library (`stdlib/inspect.py`)."""
    if SITE_PACKAGES in file:
        return file.rsplit(SITE_PACKAGES, 1)[1]
    if file.startswith(str(ROOT) + os.sep):
        return os.path.relpath(file, ROOT)
    stdlib = sysconfig.get_paths()["stdlib"]
    if file.startswith(stdlib + os.sep):
        return "stdlib/" + os.path.relpath(file, stdlib)
    return file


def add_survey_arguments(
    parser: argparse.ArgumentParser, zoo: str, out: Path, timeout_s: float, threads: int
) -> None:
    """The arguments every survey takes first: which models of `zoo`, where the results go,
    and each child's time limit and torch thread count."""
    parser.add_argument("names", nargs="*", help=f"{zoo} models (default: all)")
    parser.add_argument("--out", type=Path, default=out, help="folder for survey.json/SURVEY.md")
    parser.add_argument("--timeout", type=float, default=timeout_s, help="seconds per model")
    parser.add_argument("--threads", type=int, default=threads, help="torch intra-op threads")


def chosen_models(
    parser: argparse.ArgumentParser, names: Sequence[str], known: Mapping[str, Any]
) -> list[str]:
    """The models named on the command line (an unknown one is a usage error), else all."""
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"unknown model(s): {', '.join(unknown)}")
    return list(names) or list(known)


def log_folder(survey: str) -> Path:
    """Where the children's stderr logs go, one per model (git-ignored)."""
    folder = ROOT / "reports" / f"{survey}-survey-logs"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a survey child: offline (the models are random-init, nothing is to be
    downloaded) and able to import this repository."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **extra}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def timed_out_record(name: str, timeout_s: float) -> dict[str, Any]:
    return {"model": name, "error": f"timeout after {timeout_s:.0f} s"}


def child_record(
    name: str, stdout: str, log: Path, returncode: int | None, wall_s: float, marker: str
) -> dict[str, Any]:
    """The record a child printed on the line starting with `marker`, with how long the child
    took; a child that printed none (it crashed or raised) becomes an error record that quotes
    the last line of its stderr log."""
    elapsed = round(wall_s, 1)
    for line in stdout.splitlines():
        if line.startswith(marker):
            return {**json.loads(line[len(marker) :]), "survey_s": elapsed}
    tail = log.read_text(errors="replace").strip().splitlines()[-1:] or [""]
    return {"model": name, "error": f"exit {returncode}: {tail[0][:300]}", "survey_s": elapsed}


def run_child(
    module: str, name: str, options: Sequence[str], timeout_s: float, log_dir: Path,
    marker: str, env: Mapping[str, str],
) -> dict[str, Any]:  # fmt: skip
    """Survey one model in a child process (`python -m MODULE --one NAME OPTIONS`, its process
    group killed after `timeout_s`); a crash, a hang or an error becomes a record."""
    from advisor.core.processes import run_process

    log, out = log_dir / f"{name}.log", log_dir / f"{name}.out"
    command = [sys.executable, "-m", module, "--one", name, *options]
    with log.open("wb") as err, out.open("wb") as stdout:
        outcome = run_process(command, timeout_s, stdout=stdout, stderr=err, cwd=ROOT, env=env)
    if outcome.timed_out:
        return timed_out_record(name, timeout_s)
    text = out.read_text(errors="replace")
    return child_record(name, text, log, outcome.returncode, outcome.wall_s, marker)

"""Running targets: one `advisor run` subprocess per target, on a local pool or as Ray tasks.

A target runs in its own process group with a timeout. Whatever happens to it (exit 0 with a
report, a non-zero exit, a hang killed at the timeout, a signal) becomes a `TargetResult`; a
target never stops the sweep. The engines only decide where `run_job` runs: threads waiting
on subprocesses here (`concurrent.futures`), or Ray remote tasks on a cluster's workers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from advisor.core.errors import AdvisorError, first_line
from advisor.sweep.manifest import TargetSpec

STDERR_FILE = "stderr.txt"
TAIL_LINES = 12

Command = Callable[[TargetSpec, Path], list[str]]
OnResult = Callable[["TargetResult"], None]


def advisor_command(spec: TargetSpec, out_dir: Path) -> list[str]:
    """The command that runs one target (with the Python of the machine that runs it)."""
    return [
        sys.executable,
        "-m",
        "advisor",
        "run",
        spec.target,
        "--out",
        str(out_dir),
        "--quiet",
        *spec.args,
    ]


@dataclass(frozen=True)
class TargetResult:
    """One target's outcome, as it goes into index.json."""

    name: str
    target: str
    params: dict[str, Any]
    status: str  # ok | failed | timeout | crashed (pending: not run yet)
    wall_s: float | None = None
    exit_code: int | None = None
    signal: str | None = None
    report: str | None = None  # relative to the sweep folder
    error: str | None = None
    stderr_tail: tuple[str, ...] = ()

    @staticmethod
    def pending(spec: TargetSpec) -> TargetResult:
        return TargetResult(spec.name, spec.target, spec.params, "pending")


@dataclass(frozen=True)
class Job:
    """All a worker needs to run one target; picklable (Ray ships it to a worker)."""

    spec: TargetSpec
    sweep_dir: Path  # absolute, and the same path on every worker (a shared file system)
    cwd: Path  # the manifest's folder
    timeout_s: float
    command: Command = advisor_command


@dataclass
class Running:
    """The processes in flight in this process, so an interrupt can kill them all."""

    procs: set[subprocess.Popen[bytes]] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, proc: subprocess.Popen[bytes]) -> None:
        with self.lock:
            self.procs.add(proc)

    def discard(self, proc: subprocess.Popen[bytes]) -> None:
        with self.lock:
            self.procs.discard(proc)

    def kill_all(self) -> None:
        with self.lock:
            procs = list(self.procs)
        for proc in procs:
            kill_group(proc)


@dataclass(frozen=True)
class _Outcome:
    returncode: int | None
    timed_out: bool = False
    launch_error: str | None = None


def run_job(job: Job, running: Running | None = None) -> TargetResult:
    """Run one target to its end (or its timeout) and describe what happened."""
    out_dir = job.sweep_dir / job.spec.name
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(out_dir / STDERR_FILE, "wb") as stderr:
        outcome = _run_process(job.command(job.spec, out_dir), stderr, job, running)
    wall_s = round(time.monotonic() - started, 3)
    return describe(job, outcome, wall_s, read_tail(out_dir / STDERR_FILE))


def _run_process(
    command: list[str], stderr: IO[bytes], job: Job, running: Running | None
) -> _Outcome:
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            cwd=job.cwd,
            start_new_session=True,  # its own process group: a timeout kills all it started
        )
    except OSError as exc:
        return _Outcome(None, launch_error=f"cannot start {command[0]}: {exc}")
    if running is not None:
        running.add(proc)
    try:
        returncode = proc.wait(timeout=job.timeout_s)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        return _Outcome(proc.returncode, timed_out=True)
    except BaseException:  # interrupted (Ctrl-C, a cancelled Ray task): leave nothing behind
        kill_group(proc)
        raise
    finally:
        if running is not None:
            running.discard(proc)
    return _Outcome(returncode)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group of a target started with start_new_session, then reap it.

    Only while the leader is not reaped yet: its pid (the group id) cannot be reused by then.
    """
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # the group is gone already
    proc.wait()


def describe(job: Job, outcome: _Outcome, wall_s: float, tail: tuple[str, ...]) -> TargetResult:
    spec = job.spec
    report = job.sweep_dir / spec.name / "report.json"
    base = TargetResult(spec.name, spec.target, spec.params, "failed", wall_s, stderr_tail=tail)
    code = outcome.returncode
    if outcome.launch_error:
        return replace(base, error=outcome.launch_error)
    if outcome.timed_out:
        return replace(
            base,
            status="timeout",
            signal="SIGKILL",
            error=f"timed out after {job.timeout_s:g} s (process group killed)",
        )
    if code is not None and code < 0:
        name = _signal_name(-code)
        last = f": {tail[-1]}" if tail else ""
        return replace(base, status="crashed", signal=name, error=f"killed by {name}{last}")
    if code == 0 and report.is_file():
        return replace(base, status="ok", exit_code=0, report=f"{spec.name}/report.json")
    if code == 0:
        return replace(base, exit_code=0, error="exited 0 but wrote no report.json")
    return replace(base, exit_code=code, error=error_line(tail) or f"exit code {code}")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def error_line(tail: Iterable[str]) -> str | None:
    """The advisor's one-line error if the tail has one, else its last line."""
    lines = list(tail)
    for line in reversed(lines):
        if line.startswith("advisor: error: "):
            return line.removeprefix("advisor: error: ")
        if line.startswith("advisor: internal error: "):
            return line.removeprefix("advisor: ")
    return lines[-1] if lines else None


def read_tail(path: Path, lines: int = TAIL_LINES, max_bytes: int = 64_000) -> tuple[str, ...]:
    """The last non-empty lines of a (possibly large) text file, each cut to 400 characters."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, path.stat().st_size - max_bytes))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ()
    kept = [line.rstrip()[:400] for line in text.replace("\r", "\n").splitlines() if line.strip()]
    return tuple(kept[-lines:])


# --- engines ---------------------------------------------------------------------------------


def run_local(jobs: list[Job], workers: int, on_result: OnResult) -> None:
    """Up to `workers` targets at a time, each a subprocess waited on by a pool thread."""
    running = Running()
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(run_job, job, running) for job in jobs]
        try:
            for future in as_completed(futures):
                on_result(future.result())
        except BaseException:
            for future in futures:
                future.cancel()
            running.kill_all()
            raise


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise AdvisorError(
            "--engine ray needs Ray: pip install 'ray[default]==2.60.0' "
            "(or install advisor with the 'ray' extra)"
        ) from None
    return ray


def run_ray(jobs: list[Job], workers: int | None, address: str | None, on_result: OnResult) -> None:
    """Each target a Ray task running the same subprocess on a worker (reports written to the
    shared sweep folder); at most `workers` in flight when given. Uses a Ray already
    initialised in this process, else connects to `address`, else starts a local instance."""
    ray = import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        _init_ray(ray, address, workers)
    try:
        _gather(ray, jobs, workers or len(jobs), on_result)
    finally:
        if started_here:
            ray.shutdown()


def _init_ray(ray: Any, address: str | None, workers: int | None) -> None:
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)


def _gather(ray: Any, jobs: list[Job], limit: int, on_result: OnResult) -> None:
    task = ray.remote(run_job)
    queue = list(jobs)
    pending: dict[Any, Job] = {}
    try:
        while queue or pending:
            while queue and len(pending) < limit:
                job = queue.pop(0)
                options = {**task_resources(job.spec), "max_retries": 0}
                pending[task.options(**options).remote(job)] = job
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                on_result(_ray_result(ray, ref, pending.pop(ref)))
    except BaseException:
        for ref in pending:
            ray.cancel(ref)  # not force: the task's own handler kills its process group
        raise


def task_resources(spec: TargetSpec) -> dict[str, int]:
    """A target's Ray resources: a GPU when it runs on CUDA, its `threads` option's CPUs."""
    return {
        "num_cpus": int(spec.options.get("threads") or 1),
        "num_gpus": 1 if spec.device.startswith("cuda") else 0,
    }


def _ray_result(ray: Any, ref: Any, job: Job) -> TargetResult:
    try:
        return ray.get(ref)
    except ray.exceptions.RayError as exc:  # the task itself failed (a worker died, ...)
        spec = job.spec
        return TargetResult(
            spec.name,
            spec.target,
            spec.params,
            "crashed",
            error=f"Ray task failed: {first_line(exc)}",
        )

"""One child process run to its end or its time limit, in a process group of its own, so a
timeout or Ctrl-C kills everything it started (compile workers too) and leaves nothing behind.

Used by every place that runs measurements in another process: isolated modes and what-ifs,
data-parallel ranks (several at once, `run_processes`), sweep targets (local and Ray engines)
and the zoo surveys.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

Hook = Callable[["subprocess.Popen[bytes]"], None]


@dataclass(frozen=True)
class ProcessOutcome:
    """How a child process ended: its exit status (negative: the signal that killed it), or
    that it ran out of time (killed then), or that it could not be started."""

    returncode: int | None
    wall_s: float
    timed_out: bool = False
    launch_error: str | None = None
    stopped: bool = False  # killed because another process of the same run failed

    @property
    def signal(self) -> str | None:
        """The name of the signal that ended it, if one did (SIGKILL after a timeout)."""
        if self.timed_out:
            return "SIGKILL"
        if self.returncode is not None and self.returncode < 0:
            return signal_name(-self.returncode)
        return None


def run_process(
    command: Sequence[str],
    timeout_s: float | None,
    *,
    stdout: IO[bytes] | int = subprocess.DEVNULL,
    stderr: IO[bytes] | int = subprocess.DEVNULL,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    on_start: Hook | None = None,
    on_end: Hook | None = None,
    before_kill: Hook | None = None,
) -> ProcessOutcome:
    """Run `command` (stdin closed) until it exits or `timeout_s` passes; then `before_kill`
    (e.g. ask it for its stack) and kill its process group. Ctrl-C (any BaseException while
    waiting) kills the group and propagates. `on_start`/`on_end` see the process (a registry
    of running processes, for a cancel from elsewhere)."""
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,  # its own process group: the kill reaches its children
        )
    except OSError as exc:
        return ProcessOutcome(None, 0.0, launch_error=f"cannot start {command[0]}: {exc}")
    if on_start is not None:
        on_start(proc)
    try:
        returncode = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        if before_kill is not None:
            before_kill(proc)
        kill_group(proc)
        return ProcessOutcome(proc.returncode, _since(started), timed_out=True)
    except BaseException:  # Ctrl-C, a cancelled task: leave nothing running behind
        kill_group(proc)
        raise
    finally:
        if on_end is not None:
            on_end(proc)
    return ProcessOutcome(returncode, _since(started))


@dataclass(frozen=True)
class Launch:
    """One process of `run_processes`: its command, environment and where its output goes."""

    command: Sequence[str]
    env: Mapping[str, str] | None = None
    stdout: IO[bytes] | int = subprocess.DEVNULL
    stderr: IO[bytes] | int = subprocess.DEVNULL


POLL_S = 0.05


def run_processes(
    launches: Sequence[Launch], timeout_s: float | None, cwd: str | Path | None = None
) -> list[ProcessOutcome]:
    """Run the processes at once, each in a process group of its own (stdin closed), until
    every one has exited. When one fails (a non-zero exit status, a signal) the others are
    killed (`stopped`): processes that wait on each other (data-parallel ranks in a collective)
    would otherwise wait forever. After `timeout_s` every one still running is killed
    (`timed_out`). Ctrl-C (any BaseException while waiting) kills them all and propagates."""
    started = time.monotonic()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for launch in launches:
            procs.append(_start(launch, cwd))
    except OSError as exc:
        for proc in procs:
            kill_group(proc)
        error = f"cannot start {launches[len(procs)].command[0]}: {exc}"
        return [ProcessOutcome(None, 0.0, launch_error=error) for _ in launches]
    try:
        return _wait_all(procs, started, timeout_s)
    except BaseException:  # Ctrl-C: leave nothing running behind
        for proc in procs:
            kill_group(proc)
        raise


def _start(launch: Launch, cwd: str | Path | None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        list(launch.command),
        stdin=subprocess.DEVNULL,
        stdout=launch.stdout,
        stderr=launch.stderr,
        cwd=cwd,
        env=dict(launch.env) if launch.env is not None else None,
        start_new_session=True,
    )


def _wait_all(
    procs: list[subprocess.Popen[bytes]], started: float, timeout_s: float | None
) -> list[ProcessOutcome]:
    outcomes: dict[int, ProcessOutcome] = {}
    while len(outcomes) < len(procs):
        for index, proc in enumerate(procs):
            if index not in outcomes and proc.poll() is not None:
                outcomes[index] = ProcessOutcome(proc.returncode, _since(started))
        failed = any(o.returncode != 0 for o in outcomes.values())
        late = timeout_s is not None and time.monotonic() - started > timeout_s
        if failed or late:
            for index, proc in enumerate(procs):
                if index not in outcomes:
                    kill_group(proc)
                    outcomes[index] = ProcessOutcome(
                        proc.returncode, _since(started), timed_out=late, stopped=not late
                    )
        time.sleep(POLL_S if len(outcomes) < len(procs) else 0.0)
    return [outcomes[i] for i in range(len(procs))]


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group of a child started in its own session, then reap the leader
    (only while it is not reaped yet: until then its pid, the group id, cannot be reused)."""
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # the group is gone already
    proc.wait()


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _since(started: float) -> float:
    return round(time.monotonic() - started, 3)

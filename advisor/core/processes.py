"""One child process run to its end or its time limit, in a process group of its own, so a
timeout or Ctrl-C kills everything it started (compile workers too) and leaves nothing behind.

Used by every place that runs measurements in another process: isolated modes and what-ifs,
sweep targets (local and Ray engines) and the zoo surveys.
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

"""One worker process of the replicated protocol: it builds one arm and times blocks of it on the
parent's word (`advisor.measure.replicate` drives the workers round by round).

Messages on the connection (pickled tuples):
- worker -> parent, once: ("built", Built)
- parent -> worker: ("block", number) -> worker: ("timed", seconds, new_compiles, error); the
  worker runs `number` calls untimed, then times `number` calls (a compile in either counts)
- parent -> worker: ("stop",) and the worker exits.

The worker builds with every CPU the parent could use (compiles of a wave run side by side) and
pins itself to the parent's timing CPUs before its first block; only one worker times at a time,
the others wait on their connection. The workload's stdout goes to /dev/null (its prints still
run and cost what they cost); its stderr is kept. faulthandler writes the Python stack to a file
the parent names on a fatal signal, so a crash says where it was (not a stack on the terminal).
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import multiprocessing
import os
import sys
from typing import Any

from advisor.core.errors import AdvisorError, first_line
from advisor.measure import arms, torch_adapter
from advisor.measure.quiet import muted_dynamo_warnings
from advisor.measure.timing import timer_for
from advisor.measure.workload import load_target


def serve(
    conn: Any,
    task: arms.ArmTask,
    build_cpus: tuple[int, ...],
    time_cpus: tuple[int, ...],
    faults_path: str = "",
) -> None:
    """The worker's life: build, then answer the parent until it says stop. A fatal signal
    writes the Python stack to `faults_path` (the parent names where it died from it)."""
    if faults_path:
        # kept open for the life of the process: faulthandler writes to its descriptor
        faulthandler.enable(open(faults_path, "w"), all_threads=False)
    else:
        faulthandler.enable(all_threads=False)
    _keep_output_apart(output_path(faults_path))
    # The parent starts its workers as daemons (they die with it: its own Process objects say
    # so); in here the flag only forbids children, and a script's DataLoader starts workers.
    multiprocessing.current_process().daemon = False
    _set_affinity(build_cpus)
    # torch imported before the build, outside the muting (see `torch_adapter.import_torch`)
    torch_adapter.import_torch()
    if task.settings.threads is not None:
        # before any compile: Dynamo guards on the thread count
        torch_adapter.set_intra_op_threads(task.settings.threads)
    with muted_dynamo_warnings():
        live = _build(task)
        conn.send(("built", live.built))
        if live.call is None:
            return
        _set_affinity(time_cpus)
        _answer(conn, live, task.device)


def _build(task: arms.ArmTask) -> arms.Live:
    if arms.is_metronome(task.arm):  # the machine's reference: the target is not built
        return arms.build_metronome(task)
    try:
        workload = load_target(task.target, task.device, json.loads(task.params_json))
        return arms.build(task, workload)
    except AdvisorError as exc:
        return arms.Live(arms.Built(error=str(exc)), None)
    except Exception as exc:  # an advisor bug in a worker: the arm fails, the run goes on
        return arms.Live(arms.Built(error=f"{type(exc).__name__}: {first_line(exc)}"), None)


def _answer(conn: Any, live: arms.Live, device: str) -> None:
    timer = timer_for(device)
    call = live.call
    assert call is not None
    while True:
        try:
            message = conn.recv()
        except EOFError:  # the parent went away
            return
        if message[0] != "block":
            return
        before = live.compiles()
        number = int(message[1])
        try:
            # an untimed block first: until now the CPU ran another arm's block, and its caches
            # are that arm's (measured: with 8 arms rotating, a block timed cold ran 15% slower
            # than one timed after a warm one, in 5 of 5 repeats; docs/measurement.md)
            timer.time_block(call, number)
            elapsed = timer.time_block(call, number)
        except Exception as exc:
            conn.send(("timed", 0.0, 0, f"{type(exc).__name__}: {first_line(exc)}"))
            return
        conn.send(("timed", elapsed, live.compiles() - before, None))


def output_path(faults_path: str) -> str:
    """Where a worker's stdout and stderr go (beside its faults file; "" for none)."""
    return f"{faults_path}.out" if faults_path else ""


def _keep_output_apart(path: str) -> None:
    """What the workload prints (a script's banner, its logging, once per worker) goes to a
    file of the worker's own, never to the parent's terminal; without one, to /dev/null."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stdout.flush()
        sys.stderr.flush()
        target = os.open(path or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, sys.stdout.fileno())
        if path:  # stderr too, where it is kept: a crash's last line is read from it
            os.dup2(target, sys.stderr.fileno())
        os.close(target)


def _set_affinity(cpus: tuple[int, ...]) -> None:
    if cpus:
        with contextlib.suppress(AttributeError, OSError):
            os.sched_setaffinity(0, cpus)


def preload() -> None:
    """What the fork server imports once, so each worker starts with torch imported."""
    torch_adapter.import_torch()
    torch_adapter.torch_version()

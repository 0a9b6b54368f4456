"""Which CPUs a pinned run takes, so that runs sharing a machine (a sweep's workers, Ray tasks
on one node, two terminals) do not all pin themselves onto the same cores.

Each CPU a run pins to is claimed with an exclusive `flock` on a per-CPU lock file, held until
the run unpins (or its process dies, which releases the lock). A run takes the last free CPUs;
when too few are free it does not pin at all: sharing a pinned core with another measurement
would halve both, while the scheduler can still spread unpinned threads."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from advisor.core.model import Note
from advisor.core.policy import BUSY_CPU
from advisor.measure import torch_adapter
from advisor.measure.environment import cpu_affinity

LOCK_DIR = Path(tempfile.gettempdir()) / "advisor-cpu-locks"


@contextlib.contextmanager
def claimed(candidates: tuple[int, ...], n: int) -> Iterator[tuple[int, ...] | None]:
    """Yields `n` CPUs from `candidates` that no other advisor run holds (the last ones first),
    holding them while inside; None when fewer than `n` are free. Without file locks (not POSIX,
    or no writable temp folder) the last `n` candidates are yielded unclaimed."""
    with contextlib.ExitStack() as held:
        chosen: list[int] = []
        for cpu in reversed(candidates):
            if len(chosen) == n:
                break
            lock = _try_lock(cpu)
            if lock == _NO_LOCKING:
                yield tuple(candidates[-n:])
                return
            if lock is not None:
                held.callback(os.close, lock)
                chosen.append(cpu)
        yield tuple(sorted(chosen)) if len(chosen) == n else None


_NO_LOCKING = -1


def _try_lock(cpu: int) -> int | None:
    """An open descriptor holding the CPU's lock; None when another run holds it;
    _NO_LOCKING when this platform or folder cannot lock."""
    try:
        import fcntl
    except ImportError:
        return _NO_LOCKING
    try:
        LOCK_DIR.mkdir(mode=0o777, exist_ok=True)
        fd = os.open(LOCK_DIR / f"cpu{cpu}.lock", os.O_CREAT | os.O_RDWR, 0o666)
    except OSError:
        return _NO_LOCKING
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


@contextlib.contextmanager
def pinned(threads: int | None) -> Iterator[tuple[int, ...]]:
    """Run with `threads` torch intra-op threads and, where the platform allows, the process
    pinned to that many CPUs; both restored on exit. Yields the CPUs the process may run on.

    Pinning keeps the scheduler from moving the threads between cores mid-measurement (cold
    caches, another core's load). The last CPUs no other advisor run holds are taken (the first
    ones tend to serve more interrupts), CPUs another process keeps busy only when no other is
    left; when too few are free the process is not pinned."""
    if threads is None:
        yield cpu_affinity()
        return
    previous_threads = torch_adapter.intra_op_threads()
    previous_cpus = cpu_affinity()
    torch_adapter.set_intra_op_threads(threads)
    claim = (
        claimed(_busy_first(previous_cpus), threads)
        if len(previous_cpus) > threads
        else contextlib.nullcontext(None)
    )
    try:
        with claim as free:
            if free is not None:
                _set_affinity(free)
            yield cpu_affinity()
    finally:
        torch_adapter.set_intra_op_threads(previous_threads)
        if previous_cpus and cpu_affinity() != previous_cpus:
            _set_affinity(previous_cpus)


def _busy_first(cpus: tuple[int, ...]) -> tuple[int, ...]:
    """`cpus` with those another process keeps busy first, so that `claimed`, which takes the
    last ones, takes the idle ones."""
    busy = set(busy_cpus(cpus) or ())
    return tuple(c for c in cpus if c in busy) + tuple(c for c in cpus if c not in busy)


def _set_affinity(chosen: tuple[int, ...]) -> None:
    with contextlib.suppress(AttributeError, OSError):  # not on Linux: nothing to pin
        os.sched_setaffinity(0, chosen)


# --- who else is using the CPUs --------------------------------------------------------------


@dataclass(frozen=True)
class CpuTimes:
    """Busy and total jiffies per CPU (/proc/stat), this process's CPU seconds, and when."""

    busy: dict[int, int]
    total: dict[int, int]
    own_s: float
    at: float


def cpu_times() -> CpuTimes | None:
    """A reading of /proc/stat; None where there is none (not Linux)."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return None
    busy, total = {}, {}
    for line in lines:
        name, *fields = line.split()
        if not name.startswith("cpu") or name == "cpu":
            continue
        ticks = [int(f) for f in fields[:8]]
        user, nice, system, idle, iowait, irq, softirq, steal = ticks + [0] * (8 - len(ticks))
        cpu = int(name[3:])
        busy[cpu] = user + nice + system + irq + softirq + steal
        total[cpu] = busy[cpu] + idle + iowait
    return CpuTimes(busy, total, time.process_time(), time.monotonic())


def others_share(start: CpuTimes, end: CpuTimes, cpus: tuple[int, ...]) -> float | None:
    """The share of `cpus`' time between two readings that other processes used: their busy
    time less this process's own CPU time, over the CPUs' capacity."""
    wall = end.at - start.at
    if wall <= 0 or not cpus:
        return None
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    busy_s = sum(end.busy.get(c, 0) - start.busy.get(c, 0) for c in cpus) / hz
    others = max(0.0, busy_s - (end.own_s - start.own_s))
    return min(1.0, others / (len(cpus) * wall))


def busy_cpus(cpus: tuple[int, ...], window_s: float = 0.3) -> tuple[int, ...] | None:
    """Of `cpus`, those another process kept busy over a short wait (this one sleeps)."""
    start = cpu_times()
    if start is None:
        return None
    time.sleep(window_s)
    end = cpu_times()
    if end is None:
        return None
    held = []
    for cpu in cpus:
        span = end.total.get(cpu, 0) - start.total.get(cpu, 0)
        used = end.busy.get(cpu, 0) - start.busy.get(cpu, 0)
        if span > 0 and used / span > BUSY_CPU:
            held.append(cpu)
    return tuple(held)


def fitting_threads(requested: int | None) -> tuple[int | None, list[Note]]:
    """The threads to measure with when other processes hold CPUs at the start: without a
    request, as many as there are free CPUs (torch's threads would otherwise wait on each other
    while descheduled); a request that does not fit is kept, with a note."""
    allowed = cpu_affinity()
    busy = busy_cpus(allowed) if allowed else None
    if not busy:
        return requested, []
    free = len(allowed) - len(busy)
    values = {"busy": len(busy), "cpus": len(allowed), "free": free}
    if requested is None:
        chosen = max(1, free)
        return chosen, [Note("threads_chosen", values={**values, "threads": chosen})]
    if requested > free:
        return requested, [Note("threads_exceed_free", values={**values, "threads": requested})]
    return requested, []


def contention_watch() -> Callable[[], float | None]:
    """Start watching the CPUs this process may run on; the returned function gives the share
    of their time other processes used since (None where it cannot be read)."""
    cpus = cpu_affinity()
    start = cpu_times()

    def stop() -> float | None:
        end = cpu_times()
        return others_share(start, end, cpus) if start and end else None

    return stop

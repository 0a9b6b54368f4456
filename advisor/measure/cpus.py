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
from collections.abc import Iterator
from pathlib import Path

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
    ones tend to serve more interrupts); when too few are free the process is not pinned."""
    if threads is None:
        yield cpu_affinity()
        return
    import torch

    previous_threads = torch.get_num_threads()
    previous_cpus = cpu_affinity()
    torch.set_num_threads(threads)
    claim = (
        claimed(previous_cpus, threads)
        if len(previous_cpus) > threads
        else contextlib.nullcontext(None)
    )
    try:
        with claim as free:
            if free is not None:
                _set_affinity(free)
            yield cpu_affinity()
    finally:
        torch.set_num_threads(previous_threads)
        if previous_cpus and cpu_affinity() != previous_cpus:
            _set_affinity(previous_cpus)


def _set_affinity(chosen: tuple[int, ...]) -> None:
    with contextlib.suppress(AttributeError, OSError):  # not on Linux: nothing to pin
        os.sched_setaffinity(0, chosen)

"""Factories for tests/test_reference_ab.py: tiny eager workloads that never import torch, so
each fresh child process of the reference script starts in a fraction of a second.

Each factory notes its label and process id in the file named by $REFERENCE_AB_TEST_LOG, so a
test can see which child ran when, and that each ran in a process of its own.
"""

from __future__ import annotations

import os

from advisor.measure.workload_def import Workload

LOG_ENV = "REFERENCE_AB_TEST_LOG"


def _note(label: str) -> None:
    path = os.environ.get(LOG_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"{label} {os.getpid()}\n")


def _add(a: int, b: int) -> int:
    return a + b


def slow(device: str) -> Workload:
    """About a thousand times the work of `fast`."""
    _note("slow")
    return Workload(sum, (range(3000),), {}, "slow")


def fast(device: str) -> tuple:
    """The plain `(fn, args)` form of a factory."""
    _note("fast")
    return _add, (1, 2)


def broken(device: str) -> Workload:
    _note("broken")
    raise RuntimeError("no weights for this variant")

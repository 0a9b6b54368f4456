"""Workloads whose breaks wait a known time in Python: ground truth for the cost parts.

Each eager gap does a busy wait of a fixed length (spinning on the clock, so the profiler does
not inflate it) at the line that breaks: moving or isolating that code keeps the wait, only
deleting it (or a rewrite that removes it) saves it.
"""

from __future__ import annotations

import time

import torch

from advisor import Workload

WAIT_US = {"disabled_long": 300.0, "disabled_short": 100.0, "slow_print": 200.0}


def spin(us: float) -> None:
    end = time.perf_counter() + us * 1e-6
    while time.perf_counter() < end:
        pass


@torch.compiler.disable
def slow_helper_long(x: torch.Tensor) -> torch.Tensor:
    spin(WAIT_US["disabled_long"])
    return x


@torch.compiler.disable
def slow_helper_short(x: torch.Tensor) -> torch.Tensor:
    spin(WAIT_US["disabled_short"])
    return x


class SlowStream:
    """A log stream whose every message takes a fixed time to write (the newline is free)."""

    def write(self, text: str) -> int:
        if text.strip():
            spin(WAIT_US["slow_print"])
        return len(text)

    def flush(self) -> None:
        pass


SLOW = SlowStream()


def two_disabled_helpers(x: torch.Tensor) -> torch.Tensor:
    y = (x.sin() + 1).cos()
    y = slow_helper_long(y)
    y = (y * 2).tanh()
    y = slow_helper_short(y)
    return (y - 1).relu()


def slow_print(x: torch.Tensor) -> torch.Tensor:
    y = (x.sin() + 1).cos()
    print("step", file=SLOW)
    return (y * 2).tanh()


def disabled(device: str) -> Workload:
    return Workload(two_disabled_helpers, (torch.ones(64, device=device),), name="busy_disabled")


def printing(device: str) -> Workload:
    return Workload(slow_print, (torch.ones(64, device=device),), name="busy_print")

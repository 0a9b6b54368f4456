"""What the measurement ran on."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import torch

from advisor.core.model import Environment


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe(device: str) -> Environment:
    cuda = torch.version.cuda if torch.cuda.is_available() else None
    device_name = torch.cuda.get_device_name(device) if device.startswith("cuda") else cpu_name()
    return Environment(
        torch=str(torch.__version__),
        python=platform.python_version(),
        device_name=device_name,
        platform=f"{platform.system()} {platform.machine()}",
        cpu_threads=torch.get_num_threads(),
        cuda=cuda,
        load_average=load_average(),
        cpu_affinity=cpu_affinity(),
        cpu_count=os.cpu_count() or 0,
    )


def unknown() -> Environment:
    """The environment of a run interrupted before it could be read."""
    return Environment(torch="", python=platform.python_version(), device_name="")


def load_average() -> tuple[float, ...]:
    """os.getloadavg() (1, 5 and 15 minutes) where the platform has it."""
    try:
        return tuple(round(v, 2) for v in os.getloadavg())
    except (AttributeError, OSError):
        return ()


def cpu_affinity() -> tuple[int, ...]:
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return ()

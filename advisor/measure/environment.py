"""What the measurement ran on."""

from __future__ import annotations

import os
import platform
from pathlib import Path

try:
    import resource
except ImportError:  # pragma: no cover - Windows: page faults are not read
    resource = None  # type: ignore[assignment]

from advisor.core.model import Environment
from advisor.measure import torch_adapter

# torch is imported with this module, as it always was (see `torch_adapter.import_torch`).
torch_adapter.import_torch()


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe(device: str) -> Environment:
    cuda = torch_adapter.cuda_version() if torch_adapter.cuda_available() else None
    device_name = (
        torch_adapter.cuda_device_name(device) if device.startswith("cuda") else cpu_name()
    )
    return Environment(
        torch=torch_adapter.torch_version(),
        python=platform.python_version(),
        device_name=device_name,
        platform=f"{platform.system()} {platform.machine()}",
        cpu_threads=torch_adapter.intra_op_threads(),
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


def minor_faults() -> int | None:
    """The minor page faults this process has taken so far; None where they cannot be read."""
    if resource is None:
        return None
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)

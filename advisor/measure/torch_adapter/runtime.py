"""torch's process-wide state and the device it runs on: the import itself, intra-op threads,
grad mode and random state (kept and put back), whether CUDA is there and what it is, and CUDA
synchronisation and event timing. Public torch APIs only; torch is imported inside each
function, except by `import_torch`, whose job it is."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any


def import_torch() -> None:
    """Import torch now. Where the first `import torch` happens matters: torch's import resets
    its loggers' levels (`torch._logging._internal._init_logs`) and sets up warning filters, so
    a first import inside `muted_dynamo_warnings` or `restored_globals` would undo the muting
    or be undone by the restore. Modules that used to import torch at their top call this there,
    so importing them still imports torch."""
    import torch  # noqa: F401


def intra_op_threads() -> int:
    import torch

    return int(torch.get_num_threads())


def set_intra_op_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


@contextlib.contextmanager
def kept_torch_state() -> Iterator[None]:
    """torch's thread count, grad mode and random state (CPU, and CUDA where started) put back
    on exit as they were on entry."""
    import torch

    threads = torch.get_num_threads()
    grad = torch.is_grad_enabled()
    cpu_rng = torch.random.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.set_grad_enabled(grad)
        torch.random.set_rng_state(cpu_rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def cuda_device_count() -> int:
    import torch

    return int(torch.cuda.device_count())


def cuda_version() -> str | None:
    """The CUDA version torch was built with (None for a CPU build)."""
    import torch

    return torch.version.cuda


def cuda_device_name(device: str) -> str:
    import torch

    return str(torch.cuda.get_device_name(device))


def set_cuda_device(device: str) -> None:
    import torch

    torch.cuda.set_device(device)


def cuda_synchronize(device: str) -> None:
    """Wait for every kernel queued on `device` (a CUDA device: no check that CUDA is there)."""
    import torch

    torch.cuda.synchronize(device)


def cuda_event_seconds(call: Callable[[], Any], number: int, device: str) -> float:
    """`number` calls timed by CUDA events around the block: device time from the first
    launch to the last kernel, in seconds."""
    import torch

    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize(device)
    start.record()
    for _ in range(number):
        call()
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end)) / 1e3

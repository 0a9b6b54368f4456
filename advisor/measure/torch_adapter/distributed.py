"""torch.distributed: the process group a data-parallel rank measures in, the collective that
makes the ranks agree on a decision, and DistributedDataParallel's class (absent from a build
without torch.distributed). torch is imported inside each function."""

from __future__ import annotations

from typing import Any


def init_process_group(backend: str, rank: int, world_size: int) -> None:
    import torch.distributed as dist

    dist.init_process_group(backend, rank=rank, world_size=world_size)


def destroy_process_group() -> None:
    import torch.distributed as dist

    dist.destroy_process_group()


def ranks_agree(value: Any) -> bool:
    """Whether every rank of the process group holds the same `value` (a collective: every
    rank must ask, in the same order). True outside a process group of more than one rank."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return True
    gathered: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, value)
    return all(v == gathered[0] for v in gathered)


def ddp_class() -> type | None:
    """`torch.nn.parallel.DistributedDataParallel`; None in a build without torch.distributed."""
    try:
        from torch.nn.parallel import DistributedDataParallel
    except ImportError:  # a build without torch.distributed
        return None
    return DistributedDataParallel

"""What a user's value is, in torch's terms: a tensor, a module (or a module class), an
optimizer, and the modules alive in the process. Wraps the `isinstance` tests on `torch.Tensor`,
`torch.nn.Module` and `torch.optim.Optimizer`, so the measuring code can tell them apart without
importing torch; torch is imported inside each function."""

from __future__ import annotations

import gc
import warnings
from typing import Any


def is_tensor(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor)


def is_module(value: Any) -> bool:
    import torch

    return isinstance(value, torch.nn.Module)


def is_module_class(cls: type) -> bool:
    """Whether a class is an `nn.Module` subclass (the caller checks it is a class)."""
    import torch

    return issubclass(cls, torch.nn.Module)


def is_optimizer(value: Any) -> bool:
    import torch

    return isinstance(value, torch.optim.Optimizer)


def live_modules() -> list[Any]:
    """Every `nn.Module` the garbage collector tracks in this process."""
    import torch

    with warnings.catch_warnings():  # isinstance on deprecated torch attributes warns
        warnings.simplefilter("ignore")
        return [m for m in gc.get_objects() if isinstance(m, torch.nn.Module)]

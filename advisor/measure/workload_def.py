"""The `Workload` record: what to measure (a callable, its inputs, how to compile it). Apart
from `workload`, which resolves targets to workloads, so the script loader can build one
without importing the resolver that imports it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Workload:
    """A callable and the inputs to call it with, on one device.

    By default the callable is what gets compiled. With `compiled_module`, only that module is
    compiled, in place, as `module.compile()` would (its calls from `fn` go through the
    compiled code), and `fn` itself runs eagerly: a serving or evaluation loop around a
    compiled model.
    """

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    name: str = ""
    compiled_module: Any = None  # an nn.Module called by fn, compiled in place instead of fn

    def __call__(self) -> Any:
        return self.fn(*self.args, **self.kwargs)

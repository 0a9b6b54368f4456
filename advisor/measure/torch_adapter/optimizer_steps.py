"""The optimizers a script's training loop steps, found where a script holds them: wrapped
(accelerate's `AcceleratedOptimizer`, Lightning's `LightningOptimizer` and its strategy) or
plain. Two ways, because an arm's worker builds its variants before the loop has stepped:

- `record_optimizer_steps`: a global optimizer step pre-hook (`torch.optim.optimizer.
  register_optimizer_step_pre_hook`, public since torch 2.0): every wrapper ends in the torch
  optimizer's own `step`, so the hook sees it whatever holds it;
- `optimizers_in_frames`: the optimizers a paused script's frames hold in their locals, plain
  or one wrapper deep (`.optimizer`, `._optimizer`, `.optimizers`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

# The attributes a wrapper keeps its torch optimizer (or optimizers) in.
_WRAPPED = ("optimizer", "_optimizer", "optimizers")


def record_optimizer_steps(record: Callable[[Any], None]) -> Callable[[], None] | None:
    """Call `record(optimizer)` before every optimizer step from now on; returns what removes
    the hook (None where this torch has no global step hook). Remove it once it has seen what
    it is for: while it is there, Dynamo traces it into every compiled optimizer step."""
    module = importlib.import_module("torch.optim.optimizer")
    register = getattr(module, "register_optimizer_step_pre_hook", None)
    if register is None:
        return None

    def hook(optimizer: Any, args: Any, kwargs: Any) -> None:
        record(optimizer)

    return register(hook).remove  # type: ignore[no-any-return]


def optimizers_in_frames(frame: FrameType | None) -> dict[str, Any]:
    """The torch optimizers the frames from `frame` outwards hold in their locals, by the name
    that holds them (`opt`, `accelerator.optimizer`...), innermost first."""
    found: dict[str, Any] = {}
    while frame is not None:
        for name, value in list(frame.f_locals.items()):
            for path, optimizer in _optimizers_of(name, value):
                if all(optimizer is not seen for seen in found.values()):
                    found[path] = optimizer
        frame = frame.f_back
    return found


def _optimizers_of(name: str, value: Any) -> Iterator[tuple[str, Any]]:
    from advisor.measure.torch_adapter.values import is_optimizer

    if is_optimizer(value):
        yield name, value
        return
    if isinstance(value, type) or callable(getattr(value, "__array__", None)):
        return
    for attribute in _WRAPPED:
        try:
            held = getattr(value, attribute, None)
        except Exception:  # a property that raises is not a holder
            continue
        items = held if isinstance(held, list | tuple) else [held]
        for i, item in enumerate(items):
            if is_optimizer(item):
                suffix = f"[{i}]" if isinstance(held, list | tuple) else ""
                yield f"{name}.{attribute}{suffix}", item

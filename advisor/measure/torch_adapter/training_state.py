"""A training step's state put back after calls that only look: the modules' parameters and
buffers, their gradients, the optimizers' state and the random generators.

Planning a placement runs the workload once to see which modules run with which inputs, and
probes modules alone; on a training step that call updates the weights and draws random
numbers. The arm built afterwards must start where a fresh build would, since its first steps
are compared with eager's (`advisor.measure.first_steps`), so what those calls changed is
restored in place (parameter objects kept: the optimizers hold them).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def training_state_kept(modules: list[Any], optimizers: list[Any]) -> Iterator[None]:
    """Run the block, then put the modules, their gradients, the optimizers and the CPU (and
    initialised CUDA) random generators back as they were."""
    import torch

    saved_modules = [copy.deepcopy(m.state_dict()) for m in modules]
    grads = [
        [(p, None if p.grad is None else p.grad.detach().clone()) for p in m.parameters()]
        for m in modules
    ]
    saved_optimizers = [copy.deepcopy(o.state_dict()) for o in optimizers]
    cpu_rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    try:
        yield
    finally:
        with torch.no_grad():
            for module, state in zip(modules, saved_modules, strict=True):
                module.load_state_dict(state)
            for params in grads:
                for param, grad in params:
                    param.grad = grad
        for optimizer, state in zip(optimizers, saved_optimizers, strict=True):
            optimizer.load_state_dict(state)
        torch.set_rng_state(cpu_rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)

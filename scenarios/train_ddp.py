"""Data-parallel training: a model wrapped in DistributedDataParallel and compiled in place.
Pattern: `ddp_model = DDP(model, bucket_cap_mb=1)`, then `ddp_model.compile()`, with the training
step (zero_grad, forward, loss, backward, SGD step) eager around it, in every rank of a process
group (gloo on the CPU). Run it with `advisor run train_ddp --ranks 2`: its factory needs the
process group the ranks start, and says so without one.

Nothing here is a fault to fix. Dynamo does not compile DDP's own forward: compiled in place,
DDP's frames in torch/nn/parallel/distributed.py run eagerly, and the context manager DDP enters
around the wrapped module breaks (GB0007 at contextlib.py: the method
`DistributedDataParallel._inside_ddp_forward` is marked not to be traced; with
`torch.compile(ddp_model)` instead Dynamo traces DDP's forward and also breaks at its logger
call, GB0156). The user module's own `forward` compiles as a frame of its own. DDP's optimizer
(`torch._dynamo.config.optimize_ddp`, on by default) then splits that frame's graph at the
gradient-bucket boundaries, one graph per bucket (six buckets of one 512x512 Linear each with
`bucket_cap_mb=1`), so each bucket's all-reduce starts while the backward of the layers before
it still runs. The report shows the splits as intended, with what the extra graph calls cost,
and measures `optimize_ddp=False` (one graph, no overlap) against it. The model must be a class
of the user's: a bare `nn.Sequential` lives in torch.nn, and Dynamo would not compile its frame
at all.

No `fixed` variant: there is nothing to fix (DDP's breaks are torch's own code, and the splits
are DDP's optimizer working as meant); the `optimize_ddp=False` what-if is the alternative.
"""

from __future__ import annotations

import torch
from torch import nn

from advisor import Workload
from advisor.core.errors import AdvisorError
from scenarios._common import randn, seeded

PATTERN = "a DDP model compiled in place (DDP's own breaks; graphs split per gradient bucket)"
EXPECTED_VERDICT = "ignore"  # DDP's own break: nothing to change
FIX_KIND = None  # no `fixed` variant (see the docstring)
EXPECTED_GB_CODE = "GB0007"
EXPECTED_LINE = None  # in torch and contextlib, not in this file
RANKS = 2  # run with `--ranks 2`
EXPECTED_GRAPHS = 6  # one graph per gradient bucket

BATCH, WIDTH, LAYERS = 32, 512, 6
BUCKET_CAP_MB = 1  # one 512x512 Linear (1 MiB of fp32 weights, plus its bias) per bucket
LEARNING_RATE = 1e-3


class DeepMLP(nn.Module):
    """Six Linear(512, 512) layers with ReLU between them."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


def workload(device: str) -> Workload:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    if not (dist.is_available() and dist.is_initialized()):
        raise AdvisorError(
            "train_ddp needs a process group: run it with --ranks 2 "
            "(advisor run train_ddp --ranks 2)"
        )
    rank = dist.get_rank()
    seeded(0)  # the same initial weights on every rank (DDP broadcasts rank 0's anyway)
    model = DeepMLP().to(device)
    device_ids = [torch.device(device).index] if device.startswith("cuda") else None
    ddp_model = DistributedDataParallel(model, device_ids=device_ids, bucket_cap_mb=BUCKET_CAP_MB)
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=LEARNING_RATE)
    gen = seeded(100 + rank)  # each rank its own shard of the data
    inputs = randn(gen, BATCH, WIDTH, device=device)
    targets = randn(gen, BATCH, WIDTH, device=device)

    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(ddp_model(x), y)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return Workload(step, (inputs, targets), name="train_ddp", compiled_module=ddp_model)

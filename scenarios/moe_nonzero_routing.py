"""Mixture-of-experts routing with `nonzero`: dynamic shapes in the hot path.
Pattern: top-1 MoE dispatch written as "for each expert, find its tokens with
`torch.nonzero(expert_ids == e)` (or a boolean mask), run the expert on them and scatter back",
the reference implementation in many MoE codebases (Switch/Mixtral-style layers). `nonzero`'s
output shape depends on the data (GB0036 "Dynamic shape operator"), and since it sits inside the
loop over experts Dynamo skips the whole frame (GB7000 "graph break in loop"): the layer runs in
eager. The fix is a rewrite to fixed-shape dispatch: run every expert densely on all tokens and
select each token's expert output with a gather (or a fixed-capacity dispatch tensor), which
gives the same result and compiles to one graph; with few small experts the extra FLOPs are
cheaper than the dynamic-shape round trips.
"""

from __future__ import annotations

import torch
from torch import nn

from advisor.measure.workload import Workload
from scenarios._common import inference, marker_line, randn, seeded

PATTERN = "MoE routing with nonzero / boolean masks"
EXPECTED_VERDICT = "rewrite"
FIX_KIND = "rewrite"  # what `fixed` does: isolate, rewrite or delete
EXPECTED_GB_CODE = "GB0036"
EXPECTED_SKIP_CODE = "GB7000"
EXPECTED_LINE = marker_line(__file__)

BATCH, SEQ, DIM, FFN, EXPERTS = 2, 16, 64, 128, 4


class Expert(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(DIM, FFN)
        self.fc2 = nn.Linear(FFN, DIM)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.nn.functional.silu(self.fc1(x)))


class Top1MoE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(DIM)
        self.router = nn.Linear(DIM, EXPERTS, bias=False)
        self.experts = nn.ModuleList(Expert() for _ in range(EXPERTS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        h = self.norm(x).reshape(batch * seq, dim)
        gate, expert_ids = self.router(h).softmax(-1).max(dim=-1)
        out = torch.zeros_like(h)
        for e, expert in enumerate(self.experts):
            idx = torch.nonzero(expert_ids == e).squeeze(-1)  # graph-break
            out[idx] = expert(h[idx])
        return x + (gate.unsqueeze(-1) * out).reshape(batch, seq, dim)


class Top1MoEFixed(Top1MoE):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        h = self.norm(x).reshape(batch * seq, dim)
        gate, expert_ids = self.router(h).softmax(-1).max(dim=-1)
        every = torch.stack([expert(h) for expert in self.experts])  # [E, N, D], fixed shape
        out = every[expert_ids, torch.arange(h.shape[0], device=h.device)]
        return x + (gate.unsqueeze(-1) * out).reshape(batch, seq, dim)


def _make(device: str, dense_dispatch: bool) -> Workload:
    gen = seeded(0)
    model = inference((Top1MoEFixed if dense_dispatch else Top1MoE)(), device)
    x = randn(gen, BATCH, SEQ, DIM, device=device)
    name = "moe_nonzero_routing.fixed" if dense_dispatch else "moe_nonzero_routing"
    return Workload(model, (x,), {}, name)


def workload(device: str) -> Workload:
    return _make(device, dense_dispatch=False)


def fixed(device: str) -> Workload:
    return _make(device, dense_dispatch=True)

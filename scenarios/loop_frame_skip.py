"""A graph break inside the loop over layers: Dynamo skips the whole forward.
Pattern: adaptive-depth inference ("skip a block when its gate says it is not needed", as in
LayerDrop/early-exit models) written as `if gate(h) < threshold: continue` inside
`for block in self.blocks`. The `if` on a tensor is a data-dependent branch (GB0170), and a graph
break inside a for/while loop makes torch 2.13 give up on the entire frame (GB7000 "graph break in
loop", chained after the root break): the model's own forward runs in eager, and only the block
forwards it calls are compiled, one small graph per block per call. The fix is a rewrite that
keeps the loop free of breaks: compute the block anyway and select with
`torch.where(skip, h, block(h))`, giving the same result in a single graph.
"""

from __future__ import annotations

import torch
from torch import nn

from advisor.measure.workload import Workload
from scenarios._common import inference, marker_line, randn, seeded

PATTERN = "graph break inside a loop over layers (frame skipped)"
EXPECTED_VERDICT = "rewrite"
FIX_KIND = "rewrite"  # what `fixed` does: isolate, rewrite or delete
EXPECTED_GB_CODE = "GB0170"
EXPECTED_SKIP_CODE = "GB7000"
EXPECTED_LINE = marker_line(__file__)

BATCH, SEQ, DIM, LAYERS = 2, 16, 64, 8
SKIP_THRESHOLD = 0.1  # typical inputs keep every block; skipping is the rare case


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(DIM)
        self.fc1 = nn.Linear(DIM, DIM * 4)
        self.fc2 = nn.Linear(DIM * 4, DIM)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(h))))


class AdaptiveDepthEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.gates = nn.ModuleList(nn.Linear(DIM, 1) for _ in range(LAYERS))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        for block, gate in zip(self.blocks, self.gates, strict=True):
            keep = torch.sigmoid(gate(h.mean(dim=1))).mean()
            if keep < SKIP_THRESHOLD:  # graph-break
                continue
            h = block(h)
        return h


class AdaptiveDepthEncoderFixed(AdaptiveDepthEncoder):
    def forward(self, h: torch.Tensor) -> torch.Tensor:
        for block, gate in zip(self.blocks, self.gates, strict=True):
            keep = torch.sigmoid(gate(h.mean(dim=1))).mean()
            h = torch.where(keep < SKIP_THRESHOLD, h, block(h))
        return h


def _make(device: str, branchless: bool) -> Workload:
    gen = seeded(0)
    model = inference((AdaptiveDepthEncoderFixed if branchless else AdaptiveDepthEncoder)(), device)
    h = randn(gen, BATCH, SEQ, DIM, device=device)
    name = "loop_frame_skip.fixed" if branchless else "loop_frame_skip"
    return Workload(model, (h,), {}, name)


def workload(device: str) -> Workload:
    return _make(device, branchless=False)


def fixed(device: str) -> Workload:
    return _make(device, branchless=True)

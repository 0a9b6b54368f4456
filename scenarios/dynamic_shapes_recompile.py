"""Batches of changing sequence length: recompiles instead of graph breaks.
Pattern: an evaluation or serving loop feeds a compiled encoder batches whose sequence length
changes from batch to batch (no padding to a fixed length). Each new shape fails a size guard and
triggers a recompile; on the second distinct length Dynamo's automatic dynamic shapes recompiles
the model with a symbolic length, so the cost is compile time (and cache entries to check)
rather than per-call graph breaks. There is no graph break, so EXPECTED_GB_CODE is None; the
expected recommendation is "rewrite": mark the length dimension dynamic up front
(`torch._dynamo.mark_dynamic(batch, 1)`), or pad to a few fixed bucket lengths, so the model
compiles once. `fixed` marks the dimension dynamic and gives identical outputs. The workload's
callable is the driver loop, which runs eagerly; only the model is compiled (in place, as
`model.compile()` would), so the recompiles happen within one call of the driver.
"""

from __future__ import annotations

import torch
from torch import nn

from advisor.measure.workload import Workload
from scenarios._common import inference, randint, seeded

PATTERN = "changing sequence lengths cause recompiles"
EXPECTED_VERDICT = "rewrite"
EXPECTED_GB_CODE: str | None = None
EXPECTED_LINE: int | None = None
EXPECTED_RECOMPILES = 1  # static compile for the first length, one dynamic recompile
EXPECTED_ACTION = "dynamic"  # the advisor should recommend marking the dimension dynamic

BATCH, VOCAB, DIM, HEADS, MAX_SEQ = 4, 2000, 128, 4, 64
LENGTHS = (24, 40, 56, 64)


class SentenceEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Parameter(torch.randn(MAX_SEQ, DIM) * 0.02)
        self.norm1 = nn.LayerNorm(DIM)
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)
        self.norm2 = nn.LayerNorm(DIM)
        self.fc1 = nn.Linear(DIM, 2 * DIM)
        self.fc2 = nn.Linear(2 * DIM, DIM)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        batch, seq = token_ids.shape
        x = self.embed(token_ids) + self.pos[:seq]
        qkv = self.qkv(self.norm1(x)).view(batch, seq, 3, HEADS, DIM // HEADS).transpose(1, 3)
        q, k, v = qkv.unbind(dim=2)
        attn = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(attn.transpose(1, 2).reshape(batch, seq, DIM))
        x = x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm2(x))))
        return x.mean(dim=1)


class BatchRunner:
    """The driver: encodes a list of batches with the model, one call per batch."""

    def __init__(self, model: nn.Module, mark_dynamic: bool) -> None:
        self.model = model
        self.mark_dynamic = mark_dynamic

    def run(self, batches: list[torch.Tensor]) -> list[torch.Tensor]:
        outputs = []
        for token_ids in batches:
            if self.mark_dynamic:
                torch._dynamo.mark_dynamic(token_ids, 1)
            outputs.append(self.model(token_ids))
        return outputs


def _make(device: str, mark_dynamic: bool) -> Workload:
    gen = seeded(0)
    model = inference(SentenceEncoder(), device)
    batches = [randint(gen, VOCAB, BATCH, n, device=device) for n in LENGTHS]
    runner = BatchRunner(model, mark_dynamic)
    name = "dynamic_shapes_recompile.fixed" if mark_dynamic else "dynamic_shapes_recompile"
    return Workload(runner.run, (batches,), {}, name, compiled_module=model)


def workload(device: str) -> Workload:
    return _make(device, mark_dynamic=False)


def fixed(device: str) -> Workload:
    return _make(device, mark_dynamic=True)

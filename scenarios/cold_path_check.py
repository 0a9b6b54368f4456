"""A once-per-call input validation at the top of a large model: a break not worth fixing.
Pattern: `if (token_ids >= vocab_size).any(): raise ValueError(...)` at the start of a language
model's forward, the defensive check that turns an obscure index error into a readable one. It is
a data-dependent branch (GB0170), so it is a real graph break, but it runs once per call before
several milliseconds of transformer layers: its cost is far below 1% of the step and below the
run-to-run noise. The advice is to ignore it (or, if wanted, move validation into the data
pipeline, which is what `fixed` models by dropping the check).
"""

from __future__ import annotations

import torch
from torch import nn

from advisor.measure.workload import Workload
from scenarios._common import inference, marker_line, randint, seeded

PATTERN = "once-per-call input validation (cold path)"
EXPECTED_VERDICT = "ignore"
FIX_KIND = "delete"  # what `fixed` does: isolate, rewrite or delete
EXPECTED_GB_CODE = "GB0170"
EXPECTED_LINE = marker_line(__file__)

BATCH, SEQ, VOCAB, DIM, HEADS, LAYERS = 4, 128, 8000, 256, 4, 2


class EncoderLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(DIM)
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)
        self.norm2 = nn.LayerNorm(DIM)
        self.fc1 = nn.Linear(DIM, 4 * DIM)
        self.fc2 = nn.Linear(4 * DIM, DIM)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        qkv = self.qkv(self.norm1(x)).view(batch, seq, 3, HEADS, dim // HEADS).transpose(1, 3)
        q, k, v = qkv.unbind(dim=2)
        attn = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(attn.transpose(1, 2).reshape(batch, seq, dim))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm2(x))))


class LanguageModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Parameter(torch.randn(SEQ, DIM) * 0.02)
        self.layers = nn.ModuleList(EncoderLayer() for _ in range(LAYERS))
        self.norm = nn.LayerNorm(DIM)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        if (token_ids >= VOCAB).any():  # graph-break
            raise ValueError(f"token id out of range (vocabulary has {VOCAB} entries)")
        return self.logits(token_ids)

    def logits(self, token_ids: torch.Tensor) -> torch.Tensor:
        h = self.embed(token_ids) + self.pos[: token_ids.shape[1]]
        for layer in self.layers:
            h = layer(h)
        # tied output projection, last position only (next-token logits)
        return self.norm(h[:, -1]) @ self.embed.weight.t()


class LanguageModelFixed(LanguageModel):
    """Validation moved to the data pipeline."""

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        return self.logits(token_ids)


def _make(device: str, validate: bool) -> Workload:
    gen = seeded(0)
    model = inference((LanguageModel if validate else LanguageModelFixed)(), device)
    ids = randint(gen, VOCAB, BATCH, SEQ, device=device)
    return Workload(model, (ids,), {}, "cold_path_check" if validate else "cold_path_check.fixed")


def workload(device: str) -> Workload:
    return _make(device, validate=True)


def fixed(device: str) -> Workload:
    return _make(device, validate=False)

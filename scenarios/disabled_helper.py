"""A `torch.compiler.disable`d helper in the hot path of an attention block.
Pattern: a helper such as rotary position embedding was wrapped in `@torch.compiler.disable`
to work around an old compile bug (or "just in case") and never revisited. Every call to it is a
graph break (GB0098 "Skip calling `torch.compiler.disable()`d function"): the attention block is
split in two graphs and the helper's elementwise ops run one by one in eager between them. The
fix is to isolate as little as possible: remove the decorator when the helper traces fine (as
here), or shrink the disabled region to the one call that really needs it. `fixed` is the same
block with the decorator removed.
"""

from __future__ import annotations

import torch
from torch import nn

from advisor.measure.workload import Workload
from scenarios._common import inference, marker_line, randn, seeded

PATTERN = "torch.compiler.disable on a helper in the hot path"
EXPECTED_VERDICT = "isolate"
FIX_KIND = "rewrite"  # what `fixed` does: isolate, rewrite or delete
EXPECTED_GB_CODE = "GB0098"
EXPECTED_LINE = marker_line(__file__)

BATCH, SEQ, DIM, HEADS = 2, 32, 64, 2
HEAD_DIM = DIM // HEADS


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin


apply_rotary_disabled = torch.compiler.disable(apply_rotary)


class RotaryAttentionBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(DIM)
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
        angles = torch.outer(torch.arange(SEQ).float(), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        qkv = self.qkv(self.norm(x)).view(batch, seq, 3, HEADS, HEAD_DIM).transpose(1, 3)
        q, k, v = qkv.unbind(dim=2)  # [B, H, S, Dh]
        q, k = apply_rotary_disabled(q, k, self.cos, self.sin)  # graph-break
        return self.attend(x, q, k, v)

    def attend(
        self, x: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
    ) -> torch.Tensor:
        batch, seq, dim = x.shape
        attn = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.proj(attn.transpose(1, 2).reshape(batch, seq, dim))


class RotaryAttentionBlockFixed(RotaryAttentionBlock):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        qkv = self.qkv(self.norm(x)).view(batch, seq, 3, HEADS, HEAD_DIM).transpose(1, 3)
        q, k, v = qkv.unbind(dim=2)  # [B, H, S, Dh]
        q, k = apply_rotary(q, k, self.cos, self.sin)  # the same helper, not disabled
        return self.attend(x, q, k, v)


def _make(device: str, disabled: bool) -> Workload:
    gen = seeded(0)
    model = inference((RotaryAttentionBlock if disabled else RotaryAttentionBlockFixed)(), device)
    x = randn(gen, BATCH, SEQ, DIM, device=device)
    return Workload(model, (x,), {}, "disabled_helper" if disabled else "disabled_helper.fixed")


def workload(device: str) -> Workload:
    return _make(device, disabled=True)


def fixed(device: str) -> Workload:
    return _make(device, disabled=False)

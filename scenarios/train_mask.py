"""Training a token tagger that drops padding tokens with `nonzero` before its blocks.
Pattern: "unpadding": `index = mask.flatten().nonzero().squeeze(1)`, run the expensive layers on
the real tokens only (`h.flatten(0, 1)[index]`) and scatter the result back to the padded shape,
as variable-length BERT/FlashAttention code paths and token-dropping layers do. The model
(embeddings, residual MLP blocks, a tag head, cross-entropy with padding labels ignored) is
trained with AdamW, compiled in place with the step eager around it. `nonzero`'s output size
depends on the data (GB0036 "Dynamic shape operator"), so Dynamo ends the forward graph there,
runs `nonzero` in eager and resumes in a second graph that specialises on the number of real
tokens (it recompiles when that number changes, once, then marks it dynamic). The fix is a
rewrite to a fixed-shape masked computation: run the blocks on every position and zero the
padding with `* mask` (the padding labels are ignored by the loss either way), one graph with
the same losses and gradients; the extra work is the padding's share of the batch.
"""

from __future__ import annotations

import torch
from torch import nn

from advisor import Workload
from scenarios._common import ResidualBlock, marker_line, seeded
from scenarios._train import module_compiled_training

PATTERN = "nonzero token dropping (unpadding) in a trained model's forward"
EXPECTED_VERDICT = "rewrite"
FIX_KIND = "rewrite"  # what `fixed` does: isolate, rewrite or delete
EXPECTED_GB_CODE = "GB0036"
EXPECTED_LINE = marker_line(__file__)

BATCH, SEQ, VOCAB, WIDTH, BLOCKS, TAGS = 32, 16, 1000, 128, 4, 8
PAD_ID, IGNORE_INDEX = 0, -100


class UnpaddedTagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH, padding_idx=PAD_ID)
        self.blocks = nn.Sequential(*(ResidualBlock(WIDTH) for _ in range(BLOCKS)))
        self.head = nn.Linear(WIDTH, TAGS)

    def encode(self, h: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
        """The blocks on the real tokens only; padding positions come back as zeros."""
        flat = h.flatten(0, 1)
        index = real.flatten().nonzero().squeeze(1)  # graph-break
        packed = self.blocks(flat.index_select(0, index))
        return torch.zeros_like(flat).index_copy(0, index, packed).view_as(h)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        h = self.encode(self.embed(token_ids), token_ids != PAD_ID)
        return self.head(h).flatten(0, 1)  # (BATCH * SEQ, TAGS) logits


class UnpaddedTaggerFixed(UnpaddedTagger):
    def encode(self, h: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
        return self.blocks(h) * real.unsqueeze(-1)


def tagging_loss(logits: torch.Tensor, tags: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(logits, tags.flatten(), ignore_index=IGNORE_INDEX)


def _batch(gen: torch.Generator, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids right-padded to SEQ (lengths 4..SEQ) and their tags, IGNORE_INDEX on padding."""
    lengths = torch.randint(4, SEQ + 1, (BATCH, 1), generator=gen)
    real = torch.arange(SEQ) < lengths
    token_ids = torch.where(real, torch.randint(1, VOCAB, (BATCH, SEQ), generator=gen), PAD_ID)
    tags = torch.where(real, torch.randint(0, TAGS, (BATCH, SEQ), generator=gen), IGNORE_INDEX)
    return token_ids.to(device), tags.to(device)


def _make(device: str, masked: bool) -> Workload:
    gen = seeded(0)
    model = (UnpaddedTaggerFixed if masked else UnpaddedTagger)().to(device)
    token_ids, tags = _batch(gen, device)
    name = "train_mask.fixed" if masked else "train_mask"
    return module_compiled_training(model, tagging_loss, token_ids, tags, name)


def workload(device: str) -> Workload:
    return _make(device, masked=False)


def fixed(device: str) -> Workload:
    return _make(device, masked=True)

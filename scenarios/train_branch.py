"""Training a text classifier whose forward clips its features with a Python `if` on a norm.
Pattern: `if norm > max_norm: h = h * (max_norm / norm)`, a feature (or embedding) norm clip
applied only when the norm exceeds a threshold, as written in eager research code for
stability. The model (embeddings, mean pooling, residual MLP blocks, head) is trained with
AdamW, compiled in place with the step eager around it. Python needs a bool, so Dynamo stops
the graph at the `if` (GB0170 "Data-dependent branching"), reads the value in eager (a device
sync on a GPU) and continues in a resume graph, every step. The fix is a rewrite in tensor code:
`torch.where(norm > max_norm, h * (max_norm / norm), h)` computes the same value and the same
gradients in one graph. `fixed` does that.
"""

from __future__ import annotations

import torch
from torch import nn

from advisor import Workload
from scenarios._common import ResidualBlock, marker_line, randint, seeded
from scenarios._train import module_compiled_training

PATTERN = "if on a tensor norm (data-dependent branch) in a trained model's forward"
EXPECTED_VERDICT = "rewrite"
FIX_KIND = "rewrite"  # what `fixed` does: isolate, rewrite or delete
EXPECTED_GB_CODE = "GB0170"
EXPECTED_LINE = marker_line(__file__)

BATCH, SEQ, VOCAB, WIDTH, BLOCKS, CLASSES = 32, 16, 1000, 128, 4, 4
# The pooled features' norm is about 16 at initialisation (32 rows of 128 features, each the mean
# of 16 N(0, 1) embeddings: sqrt(32 * 128 / 16)), so the clip is active on these batches.
MAX_NORM = 5.0


class ClippedTextClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.blocks = nn.Sequential(*(ResidualBlock(WIDTH) for _ in range(BLOCKS)))
        self.head = nn.Linear(WIDTH, CLASSES)

    def clip(self, h: torch.Tensor) -> torch.Tensor:
        norm = h.norm()
        if norm > MAX_NORM:  # graph-break
            h = h * (MAX_NORM / norm)
        return h

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        pooled = self.embed(token_ids).mean(dim=1)
        return self.head(self.blocks(self.clip(pooled)))


class ClippedTextClassifierFixed(ClippedTextClassifier):
    def clip(self, h: torch.Tensor) -> torch.Tensor:
        norm = h.norm()
        return torch.where(norm > MAX_NORM, h * (MAX_NORM / norm), h)


def _make(device: str, branchless: bool) -> Workload:
    gen = seeded(0)
    model = (ClippedTextClassifierFixed if branchless else ClippedTextClassifier)().to(device)
    token_ids = randint(gen, VOCAB, BATCH, SEQ, device=device)
    labels = randint(gen, CLASSES, BATCH, device=device)
    name = "train_branch.fixed" if branchless else "train_branch"
    return module_compiled_training(model, nn.functional.cross_entropy, token_ids, labels, name)


def workload(device: str) -> Workload:
    return _make(device, branchless=False)


def fixed(device: str) -> Workload:
    return _make(device, branchless=True)

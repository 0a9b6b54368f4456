"""Python-side bookkeeping of predictions inside a chunked, compiled forward.
Pattern: a token tagger that runs a small transformer over a long sequence in fixed-size chunks
and keeps the recent argmax predictions for monitoring, written as
`self.recent.extend(logits.argmax(-1).flatten().tolist())` inside the chunk loop of the
compiled forward. `.tolist()` moves tensor values to Python (GB0033 "Data dependent operator"),
and because the break sits inside the user's `for` loop, Dynamo gives up on the whole frame
(GB7000 "graph break in loop"): the loop runs in eager, and only the per-chunk function it calls
(`tag_chunk`) is compiled, as its own frame, one small graph call per chunk per forward. The fix
is a rewrite that keeps the loop in tensors: collect the argmax tensors and convert once after
the loop, `self.recent.extend(torch.cat(preds).tolist())`. That conversion sits in a small
`torch.compiler.disable`d helper: traced, the list mutation makes Dynamo guard on the list and
recompile on every call until its recompile limit. `fixed` is that model: one graph for the
whole loop, one break at its end (GB0099), and the same logits.
"""

from __future__ import annotations

import torch
from torch import nn

from advisor.measure.workload import Workload
from scenarios._common import inference, marker_line, randint, seeded

PATTERN = ".tolist() bookkeeping per chunk in a chunked forward (frame skipped)"
EXPECTED_VERDICT = "rewrite"
FIX_KIND = "rewrite"  # what `fixed` does: isolate, rewrite or delete
EXPECTED_GB_CODE = "GB0033"
EXPECTED_SKIP_CODE = "GB7000"
EXPECTED_LINE = marker_line(__file__)
FIXED_KEEPS = "GB0099"  # `fixed` keeps one break on purpose: the disabled bookkeeping helper

BATCH, SEQ, CHUNK, VOCAB, DIM, HEADS, LAYERS, TAGS = 2, 64, 16, 1000, 64, 4, 2, 9
RECENT = 4096  # predictions kept for monitoring; the list must not grow across calls


class ChunkedTagger(nn.Module):
    """Embedding + a small transformer encoder per chunk + a linear tag head."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        layer = nn.TransformerEncoderLayer(
            DIM, HEADS, dim_feedforward=DIM * 2, dropout=0.0, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = nn.Linear(DIM, TAGS)
        self.recent: list[int] = []

    def tag_chunk(self, chunk: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(chunk)))

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        chunk_logits = []
        for chunk in token_ids.split(CHUNK, dim=1):
            logits = self.tag_chunk(chunk)
            self.recent.extend(logits.argmax(-1).flatten().tolist())  # graph-break
            chunk_logits.append(logits)
        del self.recent[:-RECENT]
        return torch.cat(chunk_logits, dim=1)


class ChunkedTaggerFixed(ChunkedTagger):
    """The same model; the predictions stay tensors in the loop and go to Python once."""

    # Kept out of the graph on purpose: traced, the list's mutation makes Dynamo guard on its
    # length and contents, so every call recompiles until the recompile limit sends the whole
    # forward back to eager (seen on torch 2.13).
    @torch.compiler.disable
    def remember(self, preds: torch.Tensor) -> None:
        self.recent.extend(preds.tolist())
        del self.recent[:-RECENT]

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        chunk_logits, preds = [], []
        for chunk in token_ids.split(CHUNK, dim=1):
            logits = self.tag_chunk(chunk)
            preds.append(logits.argmax(-1).flatten())
            chunk_logits.append(logits)
        self.remember(torch.cat(preds))
        return torch.cat(chunk_logits, dim=1)


def _make(device: str, once: bool) -> Workload:
    gen = seeded(0)
    model = inference((ChunkedTaggerFixed if once else ChunkedTagger)(), device)
    ids = randint(gen, VOCAB, BATCH, SEQ, device=device)
    name = "scalar_bookkeeping.fixed" if once else "scalar_bookkeeping"
    return Workload(model, (ids,), {}, name)


def workload(device: str) -> Workload:
    return _make(device, once=False)


def fixed(device: str) -> Workload:
    return _make(device, once=True)

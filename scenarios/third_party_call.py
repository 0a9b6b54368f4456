"""A call into a C-extension helper that Dynamo cannot trace.
Pattern: each block of the encoder calls a compiled helper from outside torch to make a small
decision, here `bisect.bisect_right` (implemented in C, like a pybind11 or Cython helper from a
third-party package) to map the sequence length to a length bucket that selects the block's
learned bias (as relative-position buckets are chosen per attention layer). Dynamo does not know
what a foreign builtin does, so it refuses it (GB0007 "Attempted to call function marked as
skipped": "a Python builtin ... or a third-party C/C++ Python extension") and splits the graph
around it in every block on every call, even though the arguments are plain Python ints. The fix
is to isolate the call: move it out of the hot path (here: evaluate it once per length at
construction and look the result up), or wrap a tensor-level helper as a
`torch.library.custom_op` so it becomes one opaque node in the graph.
"""

from __future__ import annotations

import bisect

import torch
from torch import nn

from advisor.measure.workload import Workload
from scenarios._common import inference, marker_line, randint, seeded

PATTERN = "call into an untraceable C-extension helper"
EXPECTED_VERDICT = "isolate"
FIX_KIND = "delete"  # what `fixed` does: isolate, rewrite or delete
EXPECTED_GB_CODE = "GB0007"
EXPECTED_LINE = marker_line(__file__)

BATCH, SEQ, MAX_SEQ, VOCAB, DIM, BLOCKS = 4, 24, 128, 4000, 64, 3
LENGTH_BUCKETS = [16, 32, 64, 96]


def length_bucket(length: int) -> int:
    """The bucket of a sequence length (the 'third-party' helper)."""
    return bisect.bisect_right(LENGTH_BUCKETS, length)  # graph-break


class LengthAwareBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        # the isolated version: the C call runs once per possible length, outside the hot path
        self.bucket_of_length = {n: length_bucket(n) for n in range(1, MAX_SEQ + 1)}
        self.length_bias = nn.Embedding(len(LENGTH_BUCKETS) + 1, DIM)
        self.norm = nn.LayerNorm(DIM)
        self.fc1 = nn.Linear(DIM, DIM * 2)
        self.fc2 = nn.Linear(DIM * 2, DIM)

    def bucket(self, length: int) -> int:
        return length_bucket(length)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = h + self.length_bias.weight[self.bucket(h.shape[1])]
        return h + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(h))))


class LengthAwareBlockFixed(LengthAwareBlock):
    def bucket(self, length: int) -> int:
        return self.bucket_of_length[length]  # computed at construction


class LengthAwareEncoder(nn.Module):
    def __init__(self, block: type[LengthAwareBlock]) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.block1, self.block2, self.block3 = (block() for _ in range(BLOCKS))

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        h = self.embed(token_ids)
        h = self.block3(self.block2(self.block1(h)))
        return h.mean(dim=1)


def _make(device: str, precomputed: bool) -> Workload:
    gen = seeded(0)
    block = LengthAwareBlockFixed if precomputed else LengthAwareBlock
    model = inference(LengthAwareEncoder(block), device)
    ids = randint(gen, VOCAB, BATCH, SEQ, device=device)
    name = "third_party_call.fixed" if precomputed else "third_party_call"
    return Workload(model, (ids,), {}, name)


def workload(device: str) -> Workload:
    return _make(device, precomputed=False)


def fixed(device: str) -> Workload:
    return _make(device, precomputed=True)

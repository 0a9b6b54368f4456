"""Greedy decoding that calls `.item()` on every token to stop at end-of-sequence.
Pattern: `if next_token.item() == eos_id: break` inside a per-token generation loop, as in
hand-written `generate()` functions for seq2seq, speech and small language models. `.item()`
moves a value to Python (GB0124, a device sync on a GPU) and, because it sits inside the
`for` loop, Dynamo also gives up on the whole frame (GB7000 "graph break in loop"): the entire
generation loop runs eagerly, token by token, and only the user function it calls (`step`)
is compiled, one small graph per token. The fix is a rewrite that keeps the stop condition a
tensor: run the fixed number of steps, track a `finished` mask and write the pad id after EOS,
then trim after the compiled call (or check the flag every N steps). `fixed` does that and
returns exactly the same tokens.
"""

from __future__ import annotations

import torch
from torch import nn

from advisor.measure.workload import Workload
from scenarios._common import inference, marker_line, randn, seeded

PATTERN = ".item() per token in a greedy decode loop"
EXPECTED_VERDICT = "rewrite"
FIX_KIND = "rewrite"  # what `fixed` does: isolate, rewrite or delete
EXPECTED_GB_CODE = "GB0124"
EXPECTED_SKIP_CODE = "GB7000"
EXPECTED_LINE = marker_line(__file__)

VOCAB, EMB, HIDDEN, MAX_NEW = 1000, 64, 128, 24
BOS_ID, EOS_ID, PAD_ID = 1, 2, 0


class GreedyGRUDecoder(nn.Module):
    """A GRU decoder head (seq2seq / speech style) with greedy search."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMB)
        self.cell = nn.GRUCell(EMB, HIDDEN)
        self.out = nn.Linear(HIDDEN, VOCAB)

    def step(self, token: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        state = self.cell(self.embed(token), state)
        return self.out(state).argmax(-1), state

    def forward(self, encoder_state: torch.Tensor) -> torch.Tensor:
        tokens = torch.full((MAX_NEW,), PAD_ID, dtype=torch.long, device=encoder_state.device)
        token = torch.full((1,), BOS_ID, dtype=torch.long, device=encoder_state.device)
        state = encoder_state
        for t in range(MAX_NEW):
            token, state = self.step(token, state)
            tokens[t] = token[0]
            if token.item() == EOS_ID:  # graph-break
                break
        return tokens


class GreedyGRUDecoderFixed(GreedyGRUDecoder):
    def forward(self, encoder_state: torch.Tensor) -> torch.Tensor:
        device = encoder_state.device
        steps = []
        token = torch.full((1,), BOS_ID, dtype=torch.long, device=device)
        finished = torch.zeros(1, dtype=torch.bool, device=device)
        state = encoder_state
        for _ in range(MAX_NEW):
            token, state = self.step(token, state)
            steps.append(torch.where(finished, PAD_ID, token))
            finished = finished | (token == EOS_ID)
        return torch.cat(steps)


def _make(device: str, tensor_stop: bool) -> Workload:
    gen = seeded(0)
    model = inference((GreedyGRUDecoderFixed if tensor_stop else GreedyGRUDecoder)(), device)
    encoder_state = randn(gen, 1, HIDDEN, device=device)
    name = "item_in_decode_loop.fixed" if tensor_stop else "item_in_decode_loop"
    return Workload(model, (encoder_state,), {}, name)


def workload(device: str) -> Workload:
    return _make(device, tensor_stop=False)


def fixed(device: str) -> Workload:
    return _make(device, tensor_stop=True)

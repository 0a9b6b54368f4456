"""The machine-speed reference of the replicated protocol: a fixed workload, the same in every
run of every target, timed in each wave's rounds beside the arms.

This machine's speed moves by more than any change worth finding: the same eager block ran
1.5x slower in one wave than in the next (docs/measurement.md). Inside a run the arms of a wave
are paired, so that cancels; two runs compared (`advisor compare`, `advisor check`) have no arm
in common, and each arm's process medians are read over the metronome's of the same wave. A
slower machine slows both; a slower target only the target.

The workload is what a small model's step is made of, on the host: a few eager layers on a
small batch (operator dispatch and Python around it, with some arithmetic), no compile, no
autograd. It tracks the host, so it is timed only for CPU targets: on an accelerator the timed
work is the device's, whose speed the host's does not predict.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from advisor.measure.workload_def import Workload

LABEL = "metronome"
DEVICE = "cpu"
_SEED, _BATCH, _WIDTH = 0, 8, 64


def workload() -> Workload:
    generator = torch.Generator().manual_seed(_SEED)
    model = nn.Sequential(
        nn.Linear(_WIDTH, 2 * _WIDTH),
        nn.GELU(),
        nn.Linear(2 * _WIDTH, _WIDTH),
        nn.LayerNorm(_WIDTH),
    ).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.1)
    x = torch.randn(_BATCH, _WIDTH, generator=generator)

    def step(inputs: torch.Tensor) -> Any:
        with torch.no_grad():
            return model(inputs).sum()

    return Workload(step, (x,), name=LABEL)

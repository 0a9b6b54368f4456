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

from advisor.measure import torch_adapter
from advisor.measure.workload_def import Workload

# torch is imported with this module, as it always was (see `torch_adapter.import_torch`).
torch_adapter.import_torch()

LABEL = "metronome"
DEVICE = "cpu"
_SEED, _BATCH, _WIDTH = 0, 8, 64


def workload() -> Workload:
    step, x = torch_adapter.metronome_step(_SEED, _BATCH, _WIDTH)
    return Workload(step, (x,), name=LABEL)

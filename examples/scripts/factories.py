"""The example scripts' workloads in the advisor's factory form, one unit of each script's loop:

    advisor run examples/scripts/factories.py:infer_loop    # one classifier call
    advisor run examples/scripts/factories.py:train_loop    # one training step
    advisor run examples/scripts/factories.py:decorated     # one token-selection call

Each builds the same model, seeds, sizes and batches as its script's defaults, through the
same code (models.py, and decorated.py's own function), so the two forms measure the same work.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import torch

# The advisor loads this file by its path, which puts nothing on sys.path: make the sibling
# modules (models.py, decorated.py) importable as the scripts import them.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import decorated as decorated_script  # noqa: E402  (main-guarded: importing runs no loop)
from models import (  # noqa: E402
    LEARNING_RATE,
    SEED,
    bert_setup,
    classifier_setup,
    logits_batches,
)

from advisor import Workload  # noqa: E402

# `advisor run SCRIPT` replays the measured callable's third call (the first two can take
# first-call paths); a one-call factory takes the same batch, so both forms time the same data
# (the decorated example's softmax runs measurably slower on one batch than on another).
SNAPSHOT = 2  # the index of the script's third call's batch


def infer_loop(device: str) -> Workload:
    """One call of the classifier on the script's third batch, uncompiled, in eval mode. The
    script calls it under torch.no_grad(); here no parameter requires grad, which gives the
    same inference-only graphs (the scenarios' convention for an inference workload)."""
    model, batches = classifier_setup(device, seed=SEED)
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return Workload(fn=model, args=(batches[SNAPSHOT],))


def train_loop(device: str) -> Workload:
    """One training step, the script's loop body, with the model compiled in place as the
    script's `model.compile()` does; each call takes the next of the same cycled batches."""
    model, batches = bert_setup(device, seed=SEED)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    next_batch = itertools.cycle(batches)

    def step() -> torch.Tensor:
        batch = next(next_batch)
        optimizer.zero_grad(set_to_none=True)
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        return loss.detach()

    return Workload(fn=step, compiled_module=model)


def decorated(device: str) -> Workload:
    """One call of decorated.py's `select_tokens` on the script's third logits, given as the
    function under its `@torch.compile` (the advisor compiles it itself)."""
    batches = logits_batches(device, seed=SEED)
    fn = decorated_script.select_tokens.__wrapped__
    return Workload(fn=fn, args=(batches[SNAPSHOT],))

"""Training a tiny random-init Hugging Face BERT classifier: `model.compile()` (in place), AdamW,
and the usual loop body (zero_grad, forward, loss, backward, step) over pre-built batches.

    python examples/scripts/train_loop.py --steps 200
"""

from __future__ import annotations

import argparse
import time

import torch
from models import LEARNING_RATE, SEED, bert_setup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="optimizer steps")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    model, batches = bert_setup(args.device, seed=SEED)
    model.compile()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)

    start = time.perf_counter()
    loss = torch.tensor(float("nan"))
    for step in range(args.steps):
        batch = batches[step % len(batches)]
        optimizer.zero_grad(set_to_none=True)
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
    elapsed = time.perf_counter() - start
    print(f"trained {args.steps} steps in {elapsed:.2f} s (compile included)")
    print(f"final loss: {loss.item():.4f}")


if __name__ == "__main__":
    main()

"""Batch inference with a small text classifier: `torch.compile(model)`, then a loop over
pre-built batches under `torch.no_grad()`.

    python examples/scripts/infer_loop.py --steps 200
"""

from __future__ import annotations

import argparse
import time

import torch
from models import SEED, classifier_setup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="batches to classify")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    model, batches = classifier_setup(args.device, seed=SEED)
    compiled = torch.compile(model)

    start = time.perf_counter()
    counts = torch.zeros(model.head.out_features, dtype=torch.long, device=args.device)
    with torch.no_grad():
        for step in range(args.steps):
            logits = compiled(batches[step % len(batches)])
            counts += torch.bincount(logits.argmax(dim=-1), minlength=counts.numel())
    elapsed = time.perf_counter() - start
    print(f"classified {args.steps} batches in {elapsed:.2f} s (compile included)")
    print(f"predicted class counts: {counts.tolist()}")


if __name__ == "__main__":
    main()

"""Next-token selection after a decoder step: a `@torch.compile`-decorated function (top-k
filtering, a tempered softmax, a greedy pick) that also hands a confidence figure back to Python
for the progress log, called in a loop over pre-built logits.

    python examples/scripts/decorated.py --steps 200
"""

from __future__ import annotations

import argparse
import time

import torch
from models import SEED, logits_batches

TOP_K = 50
TEMPERATURE = 0.8


@torch.compile
def select_tokens(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Greedy tokens from top-k filtered, tempered logits (batch, vocab), the entropy of each
    row's distribution, and the mean top probability."""
    cutoff = logits.topk(TOP_K, dim=-1).values[..., -1:]
    filtered = logits.masked_fill(logits < cutoff, float("-inf"))
    probs = torch.softmax(filtered / TEMPERATURE, dim=-1)
    # A Python float for the log: `.item()` copies it out on every call, which stops the
    # compiled graph here.
    confidence = probs.amax(dim=-1).mean().item()  # graph-break
    tokens = probs.argmax(dim=-1)
    entropy = -(probs * probs.clamp_min(1e-9).log()).sum(dim=-1)
    return tokens, entropy, confidence


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="decoding steps")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    batches = logits_batches(args.device, seed=SEED)

    start = time.perf_counter()
    confidences: list[float] = []
    entropy = torch.tensor(float("nan"))
    for step in range(args.steps):
        _tokens, entropy, confidence = select_tokens(batches[step % len(batches)])
        confidences.append(confidence)
    elapsed = time.perf_counter() - start
    mean_confidence = sum(confidences) / max(len(confidences), 1)
    print(f"{args.steps} selection steps in {elapsed:.2f} s (compile included)")
    print(f"mean confidence: {mean_confidence:.4f}, last mean entropy: {entropy.mean():.4f}")


if __name__ == "__main__":
    main()

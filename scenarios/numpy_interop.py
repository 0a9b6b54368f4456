"""NumPy in the middle of a model: bucketising dense features with `np.digitize`.
Pattern: a ranking/recommendation model that turns continuous features into bucket ids with
NumPy (`np.digitize(x.cpu().numpy(), bins)`) before an embedding lookup, code that often comes
from a feature-engineering notebook. Dynamo traces many NumPy calls by translating them to
torch, but not all: `np.digitize` is not in `torch._numpy`, so on torch 2.13 the graph breaks
with GB0294 "attempted to trace numpy function unsupported by PyTorch", and every call pays a
tensor -> ndarray -> tensor round trip in eager (a device copy on a GPU). The fix is a rewrite
with the torch equivalent: `torch.bucketize(x, boundaries, right=True)` matches `np.digitize`
exactly and keeps the model in one graph.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from advisor.measure.workload import Workload
from scenarios._common import inference, marker_line, randn, seeded

PATTERN = "NumPy call (np.digitize) in the middle of the model"
EXPECTED_VERDICT = "rewrite"
FIX_KIND = "rewrite"  # what `fixed` does: isolate, rewrite or delete
EXPECTED_GB_CODE = "GB0294"
EXPECTED_LINE = marker_line(__file__)

BATCH, FEATURES, BUCKETS, EMB, HIDDEN = 64, 13, 16, 16, 128
BOUNDARIES = np.linspace(-2.0, 2.0, BUCKETS - 1, dtype=np.float32)


class BucketizedRanker(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("boundaries", torch.from_numpy(BOUNDARIES.copy()))
        self.register_buffer("offsets", torch.arange(FEATURES) * BUCKETS)
        self.embed = nn.Embedding(FEATURES * BUCKETS, EMB)
        self.dense = nn.Linear(FEATURES, EMB)
        self.fc1 = nn.Linear(EMB * (FEATURES + 1), HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, 1)

    def forward(self, dense_features: torch.Tensor) -> torch.Tensor:
        x = torch.log1p(dense_features.abs()) * dense_features.sign()
        buckets = torch.from_numpy(np.digitize(x.cpu().numpy(), BOUNDARIES))  # graph-break
        sparse = self.embed(buckets.to(x.device) + self.offsets).flatten(1)
        h = torch.cat([sparse, self.dense(x)], dim=1)
        return torch.sigmoid(self.fc2(torch.relu(self.fc1(h)))).squeeze(-1)


class BucketizedRankerFixed(BucketizedRanker):
    def forward(self, dense_features: torch.Tensor) -> torch.Tensor:
        x = torch.log1p(dense_features.abs()) * dense_features.sign()
        buckets = torch.bucketize(x, self.boundaries, right=True)  # == np.digitize(x, BOUNDARIES)
        sparse = self.embed(buckets + self.offsets).flatten(1)
        h = torch.cat([sparse, self.dense(x)], dim=1)
        return torch.sigmoid(self.fc2(torch.relu(self.fc1(h)))).squeeze(-1)


def _make(device: str, use_torch: bool) -> Workload:
    gen = seeded(0)
    model = inference((BucketizedRankerFixed if use_torch else BucketizedRanker)(), device)
    features = randn(gen, BATCH, FEATURES, device=device) * 3.0
    name = "numpy_interop.fixed" if use_torch else "numpy_interop"
    return Workload(model, (features,), {}, name)


def workload(device: str) -> Workload:
    return _make(device, use_torch=False)


def fixed(device: str) -> Workload:
    return _make(device, use_torch=True)

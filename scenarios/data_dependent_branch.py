"""An `if` on a tensor value in the forward: input normalisation in an image classifier.
Pattern: `if images.max() > 1.0: images = images / 255.0`, the "accept both 0-255 and 0-1
images" convenience found in vision preprocessing code and model wrappers. Python needs a bool,
so Dynamo stops the graph at the `if` (GB0170 "Data-dependent branching"), reads the value in
eager (a device sync on a GPU) and continues in one of two resume graphs, on every call. The fix
is a rewrite in tensor code: `torch.where(images.max() > 1.0, images / 255.0, images)` (or
`torch.cond` for branches that do real work), which keeps the whole forward in one graph and
gives the same result.
"""

from __future__ import annotations

import torch
from torch import nn

from advisor.workload import Workload
from scenarios._common import inference, marker_line, seeded

PATTERN = "if on a tensor value (data-dependent branch)"
EXPECTED_VERDICT = "rewrite"
EXPECTED_GB_CODE = "GB0170"
EXPECTED_LINE = marker_line(__file__)

BATCH, CHANNELS, SIZE, CLASSES = 4, 3, 16, 10


class SmallConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))
        self.conv1 = nn.Conv2d(CHANNELS, 16, 3, padding=1, stride=2)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, stride=2)
        self.head = nn.Linear(32, CLASSES)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if images.max() > 1.0:  # graph-break
            images = images / 255.0
        return self.classify(images)

    def classify(self, images: torch.Tensor) -> torch.Tensor:
        x = (images - self.mean) / self.std
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        return self.head(x.mean(dim=(2, 3))).softmax(-1)


class SmallConvNetFixed(SmallConvNet):
    def forward(self, images: torch.Tensor) -> torch.Tensor:
        images = torch.where(images.max() > 1.0, images / 255.0, images)
        return self.classify(images)


def _make(device: str, branchless: bool) -> Workload:
    gen = seeded(0)
    model = inference((SmallConvNetFixed if branchless else SmallConvNet)(), device)
    # uint8-range pixel values stored as float: the branch is taken
    images = (torch.rand(BATCH, CHANNELS, SIZE, SIZE, generator=gen) * 255.0).round().to(device)
    name = "data_dependent_branch.fixed" if branchless else "data_dependent_branch"
    return Workload(model, (images,), {}, name)


def workload(device: str) -> Workload:
    return _make(device, branchless=False)


def fixed(device: str) -> Workload:
    return _make(device, branchless=True)

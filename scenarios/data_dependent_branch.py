"""An `if` on a tensor value in the forward: input normalisation in a multi-input classifier.
Pattern: `if x.max() > 1.0: x = x / 255.0`, the "accept both 0-255 and 0-1 images" convenience
found in vision preprocessing code and model wrappers, here in a helper applied to each of the
model's three image inputs (RGB, depth, saliency map). Python needs a bool, so Dynamo stops the
graph at the `if` (GB0170 "Data-dependent branching"), reads the value in eager (a device sync
on a GPU) and continues in a resume graph, three times per call. The fix is a rewrite in tensor
code: `torch.where(x.max() > 1.0, x / 255.0, x)` (or `torch.cond` for branches that do real
work), which keeps the whole forward in one graph and gives the same result.
"""

from __future__ import annotations

import torch
from torch import nn

from advisor.measure.workload import Workload
from scenarios._common import inference, marker_line, seeded

PATTERN = "if on a tensor value (data-dependent branch)"
EXPECTED_VERDICT = "rewrite"
FIX_KIND = "rewrite"  # what `fixed` does: isolate, rewrite or delete
EXPECTED_GB_CODE = "GB0170"
EXPECTED_LINE = marker_line(__file__)

BATCH, CHANNELS, SIZE, CLASSES = 4, 3, 16, 10
IN_CHANNELS = CHANNELS + 2  # RGB + depth + saliency


class SmallConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        mean = torch.tensor([0.485, 0.456, 0.406, 0.5, 0.5]).view(1, IN_CHANNELS, 1, 1)
        std = torch.tensor([0.229, 0.224, 0.225, 0.25, 0.25]).view(1, IN_CHANNELS, 1, 1)
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)
        self.conv1 = nn.Conv2d(IN_CHANNELS, 16, 3, padding=1, stride=2)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, stride=2)
        self.head = nn.Linear(32, CLASSES)

    def to_unit_range(self, x: torch.Tensor) -> torch.Tensor:
        if x.max() > 1.0:  # graph-break
            x = x / 255.0
        return x

    def forward(
        self, rgb: torch.Tensor, depth: torch.Tensor, saliency: torch.Tensor
    ) -> torch.Tensor:
        rgb = self.to_unit_range(rgb)
        depth = self.to_unit_range(depth)
        saliency = self.to_unit_range(saliency)
        return self.classify(torch.cat([rgb, depth, saliency], dim=1))

    def classify(self, images: torch.Tensor) -> torch.Tensor:
        x = (images - self.mean) / self.std
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        return self.head(x.mean(dim=(2, 3))).softmax(-1)


class SmallConvNetFixed(SmallConvNet):
    def to_unit_range(self, x: torch.Tensor) -> torch.Tensor:
        return torch.where(x.max() > 1.0, x / 255.0, x)


def _make(device: str, branchless: bool) -> Workload:
    gen = seeded(0)
    model = inference((SmallConvNetFixed if branchless else SmallConvNet)(), device)
    # uint8-range RGB and depth stored as float (the branch is taken); saliency already in [0, 1]
    rgb = (torch.rand(BATCH, CHANNELS, SIZE, SIZE, generator=gen) * 255.0).round().to(device)
    depth = (torch.rand(BATCH, 1, SIZE, SIZE, generator=gen) * 255.0).round().to(device)
    saliency = torch.rand(BATCH, 1, SIZE, SIZE, generator=gen).to(device)
    name = "data_dependent_branch.fixed" if branchless else "data_dependent_branch"
    return Workload(model, (rgb, depth, saliency), {}, name)


def workload(device: str) -> Workload:
    return _make(device, branchless=False)


def fixed(device: str) -> Workload:
    return _make(device, branchless=True)

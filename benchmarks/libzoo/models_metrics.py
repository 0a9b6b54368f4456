"""The library zoo's metrics (torchmetrics). `models.py` lists them with the rest of the zoo."""

from __future__ import annotations

import functools

import torch

from advisor import Workload
from benchmarks.libzoo.common import Built, Registry, inputs

MODELS = Registry()

# --- torchmetrics: metrics -------------------------------------------------------------------


def _classification_batch(device: str, classes: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    generator = inputs()
    probs = torch.randn(256, classes, generator=generator).softmax(-1)
    target = torch.randint(0, classes, (256,), generator=generator)
    return probs.to(device), target.to(device)


@MODELS.register(
    "tm_accuracy",
    "torchmetrics",
    "classification metric",
    "functional multiclass_accuracy (argument validation on)",
)
def _tm_accuracy(device: str) -> Built:
    from torchmetrics.functional.classification import multiclass_accuracy

    probs, target = _classification_batch(device)
    return Workload(functools.partial(multiclass_accuracy, num_classes=5), (probs, target)), []


@MODELS.register(
    "tm_auroc",
    "torchmetrics",
    "classification metric",
    "functional binary_auroc (exact ROC curve, no thresholds)",
)
def _tm_auroc(device: str) -> Built:
    from torchmetrics.functional.classification import binary_auroc

    generator = inputs()
    scores = torch.rand(256, generator=generator)
    target = (torch.rand(256, generator=generator) < scores).long()
    return Workload(binary_auroc, (scores.to(device), target.to(device))), []


@MODELS.register(
    "tm_ssim_module",
    "torchmetrics",
    "image metric",
    "StructuralSimilarityIndexMeasure module forward (updates its state, returns batch SSIM)",
)
def _tm_ssim_module(device: str) -> Built:
    from torchmetrics.image import StructuralSimilarityIndexMeasure

    metric = StructuralSimilarityIndexMeasure(data_range=1.0).to(device)
    generator = inputs()
    preds = torch.rand(2, 3, 32, 32, generator=generator)
    target = (preds + 0.05 * torch.randn(2, 3, 32, 32, generator=generator)).clamp(0, 1)
    return Workload(metric, (preds.to(device), target.to(device))), [metric]

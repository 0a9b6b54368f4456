"""User code around library models: the function a user compiles is their own (a loop over
layers, a lambda, an evaluation helper), and the graph break is in library code it reaches, or
in the user's own lines next to it. A break in library code reached through the user's frame is
a known problem case for advice: the line to change is in site-packages, the frame that loses
its graph is the user's.

Every user line these workloads run is in this file (outside site-packages), so a report can
tell the user's frames from the library's. `models.py` registers each builder here under the
same name; its docstring gives the seeding and eval-mode conventions they follow."""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import nn

from advisor import Workload
from benchmarks.libzoo.common import Built, frozen, inputs
from benchmarks.libzoo.models_probabilistic import spline_flow


def user_layer_loop(device: str) -> Built:
    """`for layer in layers: x = layer(x)` over torch layers, a MONAI Gaussian smoothing layer
    (it turns its sigma into a kernel size with `.item()`: a break inside a library layer) and
    a kornia unsharp mask."""
    import kornia.filters
    from monai.networks.layers import GaussianFilter

    layers = nn.ModuleList(
        [
            nn.Conv2d(3, 8, 3, padding=1),
            nn.ReLU(),
            GaussianFilter(spatial_dims=2, sigma=1.0),
            kornia.filters.UnsharpMask((3, 3), (1.5, 1.5)),
            nn.Conv2d(8, 3, 3, padding=1),
        ]
    ).to(device)
    frozen(layers)

    def run_layers(x: torch.Tensor) -> torch.Tensor:
        for layer in layers:
            x = layer(x)
        return x

    images = torch.rand(2, 3, 32, 32, generator=inputs()).to(device)
    return Workload(run_layers, (images,)), [layers]


def user_lambda_flow(device: str) -> Built:
    """A lambda computing a negative log-likelihood with a normflows neural spline flow (its
    spline code selects the samples inside the tails with boolean masks)."""
    flow = spline_flow(device)
    samples = 2.0 * torch.randn(128, 4, generator=inputs()).to(device)
    return Workload(lambda x: -flow.log_prob(x).mean(), (samples,)), [flow]


def evaluate(
    model: nn.Module, images: torch.Tensor, labels: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A user's evaluation step: loss, torchmetrics accuracy, and the accuracy on the
    predictions the model is confident about (a boolean mask: a dynamic shape in user code)."""
    from torchmetrics.functional.classification import multiclass_accuracy

    logits = model(images)
    loss = F.cross_entropy(logits, labels)
    accuracy = multiclass_accuracy(logits, labels, num_classes=logits.shape[-1])
    probs = logits.softmax(-1)
    confident = probs.amax(-1) > 0.3
    confident_accuracy = (probs[confident].argmax(-1) == labels[confident]).float().mean()
    return loss, accuracy, confident_accuracy


def user_eval_step(device: str) -> Built:
    """`evaluate` on a MONAI classifier (conv encoder and a linear head) and a batch of 16."""
    from monai.networks.nets import Classifier

    model = Classifier(in_shape=(1, 32, 32), classes=5, channels=(8, 16), strides=(2, 2))
    model = model.to(device)
    frozen(model)
    generator = inputs()
    images = torch.randn(16, 1, 32, 32, generator=generator).to(device)
    labels = torch.randint(0, 5, (16,), generator=generator).to(device)
    return Workload(functools.partial(evaluate, model), (images, labels)), [model]


def user_moe_lambda(device: str) -> Built:
    """A lambda returning the logits of the transformers zoo's Mixtral with the eager
    per-expert loop (`nonzero` over the experts that were hit: breaks in transformers code)."""
    from benchmarks.zoo.hf_models import build as build_hf

    workload = build_hf(device, "mixtral_eager_experts")
    model = workload.fn
    ids, mask = workload.kwargs["input_ids"], workload.kwargs["attention_mask"]
    return Workload(
        lambda input_ids, attention_mask: (
            model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits
        ),
        (ids, mask),
    ), [model]

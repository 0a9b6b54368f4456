"""A zoo of tiny random-init models from pip libraries other than transformers, for running the
advisor on real third-party code: medical imaging (monai), probabilistic programming (pyro),
metrics (torchmetrics), computer vision (kornia), Gaussian processes (gpytorch, botorch), ODE and
SDE solvers (torchdiffeq, torchsde), graph networks (torch_geometric), normalizing flows
(normflows), equivariant networks (e3nn) and einops layers; plus "user code around a library
model" (`user_code.py`): a user's loop, lambda or helper function that reaches library code.

    advisor run benchmarks/libzoo/models.py:build --param model=user_layer_loop

Every entry is seeded (`torch.manual_seed(0)` before it is built; inputs from a
`torch.Generator` seeded with 1), small (one eager call takes a few milliseconds on one CPU
thread), has its modules in eval mode with parameters frozen, and returns the same output on
every call (stochastic code replays fixed randomness: Pyro's `poutine.seed`, saved kornia
augmentation parameters, a fixed-entropy Brownian motion, fixed Sobol base samples). No
downloads: every model is randomly initialised.

The workload's `fn` is the library's own callable wherever one exists (an `nn.Module`, a bound
method such as `flow.log_prob`, or a library function with its options bound by
`functools.partial`), so a break in it is a break in library code. Some libraries are used
through code the user writes by design: a Pyro model, a GPyTorch model class and its prediction
function (under `fast_pred_var`), an ODE or SDE's drift, e3nn's two-layer message function.
Those few lines live in this repository, beside their builders, and count as user code.

The builders are in one module per kind of model: `models_imaging.py` (monai, kornia, einops),
`models_probabilistic.py` (pyro, gpytorch, botorch, normflows), `models_metrics.py`
(torchmetrics), `models_dynamics.py` (torchdiffeq, torchsde), `models_graphs.py`
(torch_geometric, e3nn) and `user_code.py`; this file is the zoo itself: every model in the
manifest's order, and the factory. The tuning / held-out split is in `split.py`. Each library is
imported inside its builders, so a missing library fails only its models.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def _repository_importable() -> None:
    """Put the repository on sys.path when this file is loaded by its path from elsewhere
    (`advisor run benchmarks/libzoo/models.py:build`), so that `benchmarks.*` imports."""
    if importlib.util.find_spec("benchmarks") is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))


_repository_importable()

import torch  # noqa: E402

from advisor import Workload  # noqa: E402
from benchmarks.libzoo import (  # noqa: E402
    models_dynamics,
    models_graphs,
    models_imaging,
    models_metrics,
    models_probabilistic,
    user_code,
)
from benchmarks.libzoo.common import Built, LibModel  # noqa: E402
from benchmarks.libzoo.split import HELD_OUT_MODELS, TUNING_MODELS  # noqa: E402

# What a zoo module offers benchmarks.accuracy: its models, its halves and its factory.
__all__ = ["HELD_OUT_MODELS", "MODELS", "TUNING_MODELS", "build", "build_with_modules"]

# The zoo's order (the manifest's, and the survey's rows): by library in this order, each
# library's models in the order its module registers them; then the user-code entries.
LIBRARIES = (
    "monai",
    "pyro-ppl",
    "torchmetrics",
    "kornia",
    "gpytorch",
    "botorch",
    "torchdiffeq",
    "torchsde",
    "torch-geometric",
    "normflows",
    "e3nn",
    "einops",
)
_FAMILIES = (models_imaging, models_probabilistic, models_metrics, models_dynamics, models_graphs)
_LIBRARY_MODELS = [item for family in _FAMILIES for item in family.MODELS.items()]

# User code around library models (user_code.py): (name, library, family, what it computes).
_USER_MODELS = (
    (
        "user_layer_loop",
        "monai",
        "user loop over library layers",
        "`for layer in layers: x = layer(x)` over torch convs, a MONAI Gaussian filter (it "
        "breaks) and a kornia unsharp mask",
    ),
    (
        "user_lambda_flow",
        "normflows",
        "lambda around a library model",
        "`lambda x: -flow.log_prob(x).mean()` on a neural spline flow",
    ),
    (
        "user_eval_step",
        "torchmetrics",
        "user evaluation helper",
        "a user's eval step: monai classifier, cross-entropy, torchmetrics accuracy, a "
        "confidence mask",
    ),
    (
        "user_moe_lambda",
        "transformers",
        "lambda around a library model",
        "`lambda ids, mask: model(...).logits` on Mixtral with the eager per-expert loop",
    ),
)

MODELS: dict[str, LibModel] = {
    **dict(sorted(_LIBRARY_MODELS, key=lambda item: LIBRARIES.index(item[1].library))),
    **{
        name: LibModel(library, family, computes, getattr(user_code, name), user_code=True)
        for name, library, family, computes in _USER_MODELS
    },
}


def build(device: str = "cpu", model: str = "monai_unet") -> Workload:
    """The advisor factory: zoo model `model` on `device`, with its seeded inputs."""
    return build_with_modules(device, model)[0]


def build_with_modules(device: str, model: str) -> Built:
    """The workload and the modules it runs (the survey counts their parameters)."""
    entry = MODELS.get(model)
    if entry is None:
        raise ValueError(f"unknown libzoo model '{model}' (known: {', '.join(sorted(MODELS))})")
    torch.manual_seed(0)
    workload, modules = entry.builder(device)
    return Workload(workload.fn, workload.args, workload.kwargs, name=f"lib.{model}"), modules

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
Those few lines live here, in this repository, and count as user code.

Each library is imported inside its builders, so a missing library fails only its models.
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch import nn

from advisor import Workload

Built = tuple[Workload, Sequence[nn.Module]]  # the workload and the modules it runs (for counts)


@dataclass(frozen=True)
class LibModel:
    """One zoo entry: its library (the pip distribution), what it is, how to build it."""

    library: str  # pip distribution name, e.g. "pyro-ppl"
    family: str  # e.g. "segmentation", "normalizing flow"
    computes: str  # what one call computes, in a few words
    builder: Callable[[str], Built]
    user_code: bool = False  # a user-code-around-a-library-model entry (user_code.py)


MODELS: dict[str, LibModel] = {}


def _register(
    name: str, library: str, family: str, computes: str, user_code: bool = False
) -> Callable[[Callable[[str], Built]], Callable[[str], Built]]:
    def add(builder: Callable[[str], Built]) -> Callable[[str], Built]:
        MODELS[name] = LibModel(library, family, computes, builder, user_code)
        return builder

    return add


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


def parameter_count(modules: Sequence[nn.Module]) -> int:
    seen: set[int] = set()
    total = 0
    for module in modules:
        for p in module.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                total += p.numel()
    return total


def frozen(*modules: nn.Module) -> None:
    """Inference: eval mode, no autograd graph recorded for the parameters."""
    for module in modules:
        module.eval().requires_grad_(False)


def inputs(seed: int = 1) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# --- monai: medical imaging ------------------------------------------------------------------


@_register("monai_unet", "monai", "segmentation", "2D residual UNet on 2x1x32x32 images")
def _monai_unet(device: str) -> Built:
    from monai.networks.nets import UNet

    net = UNet(
        spatial_dims=2,
        in_channels=1,
        out_channels=2,
        channels=(8, 16, 32),
        strides=(2, 2),
        num_res_units=1,
    ).to(device)
    frozen(net)
    images = torch.randn(2, 1, 32, 32, generator=inputs()).to(device)
    return Workload(net, (images,)), [net]


@_register("monai_swin_unetr", "monai", "segmentation", "2D SwinUNETR (windowed attention)")
def _monai_swin_unetr(device: str) -> Built:
    from monai.networks.nets import SwinUNETR

    net = SwinUNETR(
        in_channels=1,
        out_channels=2,
        spatial_dims=2,
        feature_size=12,
        depths=(1, 1, 1, 1),
        num_heads=(3, 3, 3, 3),
        window_size=4,
    ).to(device)
    frozen(net)
    images = torch.randn(1, 1, 64, 64, generator=inputs()).to(device)  # 2x2 at the bottom
    return Workload(net, (images,)), [net]


@_register(
    "monai_sliding_window",
    "monai",
    "segmentation",
    "sliding_window_inference of a small UNet over a 48x48 image in 24x24 windows",
)
def _monai_sliding_window(device: str) -> Built:
    from monai.inferers import sliding_window_inference
    from monai.networks.nets import UNet

    net = UNet(spatial_dims=2, in_channels=1, out_channels=2, channels=(8, 16), strides=(2,)).to(
        device
    )
    frozen(net)
    infer = functools.partial(
        sliding_window_inference, roi_size=(24, 24), sw_batch_size=4, predictor=net, overlap=0.25
    )
    image = torch.randn(1, 1, 48, 48, generator=inputs()).to(device)
    return Workload(infer, (image,)), [net]


# --- pyro: probabilistic programming ---------------------------------------------------------


def _regression_model(x: torch.Tensor, y: torch.Tensor) -> None:
    """A Bayesian linear regression (a Pyro model is user code by design)."""
    import pyro
    import pyro.distributions as dist

    weight = pyro.sample("weight", dist.Normal(0.0, 1.0).expand([x.shape[-1]]).to_event(1))
    bias = pyro.sample("bias", dist.Normal(0.0, 1.0))
    noise = pyro.sample("noise", dist.HalfNormal(1.0))
    with pyro.plate("data", x.shape[0]):
        pyro.sample("obs", dist.Normal(x @ weight + bias, noise), obs=y)


def _regression_data(device: str) -> tuple[torch.Tensor, torch.Tensor]:
    generator = inputs()
    x = torch.randn(64, 3, generator=generator)
    y = x @ torch.tensor([1.0, -2.0, 0.5]) + 0.1 * torch.randn(64, generator=generator)
    return x.to(device), y.to(device)


@_register(
    "pyro_svi_elbo",
    "pyro-ppl",
    "variational inference",
    "Trace_ELBO loss of an AutoNormal guide (one particle, reseeded by poutine.seed)",
)
def _pyro_svi_elbo(device: str) -> Built:
    import pyro
    from pyro import poutine
    from pyro.infer import Trace_ELBO
    from pyro.infer.autoguide import AutoNormal

    pyro.clear_param_store()
    x, y = _regression_data(device)
    guide = AutoNormal(_regression_model)
    guide(x, y)  # creates the guide's parameters
    frozen(guide)
    elbo = Trace_ELBO()
    # The guide samples its latents: poutine.seed reseeds Pyro's RNGs at every call, so the
    # loss is the same on every call (a fixed-noise ELBO estimate).
    loss = poutine.seed(
        functools.partial(elbo.differentiable_loss, _regression_model, guide), rng_seed=0
    )
    return Workload(loss, (x, y)), [guide]


@_register(
    "pyro_potential",
    "pyro-ppl",
    "MCMC potential",
    "HMC potential energy (unconstrained log joint) of a hierarchical model",
)
def _pyro_potential(device: str) -> Built:
    import pyro
    from pyro.infer.mcmc.util import initialize_model

    pyro.clear_param_store()
    x, y = _regression_data(device)
    pyro.set_rng_seed(0)
    init, potential_fn, _, _ = initialize_model(_regression_model, model_args=(x, y))
    return Workload(potential_fn, (init,)), []


@_register(
    "pyro_hmm",
    "pyro-ppl",
    "hidden Markov model",
    "DiscreteHMM log_prob of 4 sequences of 32 steps (parallel-scan forward algorithm)",
)
def _pyro_hmm(device: str) -> Built:
    import pyro.distributions as dist

    generator = inputs()
    states = 5
    hmm = dist.DiscreteHMM(
        torch.randn(states, generator=generator).to(device),
        torch.randn(states, states, generator=generator).to(device),
        dist.Normal(
            torch.randn(states, generator=generator).to(device), torch.ones(states).to(device)
        ),
    )
    observations = torch.randn(4, 32, generator=generator).to(device)
    return Workload(hmm.log_prob, (observations,)), []


# --- torchmetrics: metrics -------------------------------------------------------------------


def _classification_batch(device: str, classes: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    generator = inputs()
    probs = torch.randn(256, classes, generator=generator).softmax(-1)
    target = torch.randint(0, classes, (256,), generator=generator)
    return probs.to(device), target.to(device)


@_register(
    "tm_accuracy",
    "torchmetrics",
    "classification metric",
    "functional multiclass_accuracy (argument validation on)",
)
def _tm_accuracy(device: str) -> Built:
    from torchmetrics.functional.classification import multiclass_accuracy

    probs, target = _classification_batch(device)
    return Workload(functools.partial(multiclass_accuracy, num_classes=5), (probs, target)), []


@_register(
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


@_register(
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


# --- kornia: computer vision -----------------------------------------------------------------


def _images(device: str, batch: int = 2, size: int = 32) -> torch.Tensor:
    return torch.rand(batch, 3, size, size, generator=inputs()).to(device)


@_register(
    "kornia_augment",
    "kornia",
    "augmentation",
    "AugmentationSequential (affine, color jiggle, flip p=0.5) replaying fixed parameters",
)
def _kornia_augment(device: str) -> Built:
    import kornia.augmentation as K

    augment = K.AugmentationSequential(
        K.RandomAffine(degrees=15.0, translate=(0.1, 0.1), p=1.0),
        K.ColorJiggle(0.2, 0.2, 0.2, 0.05, p=1.0),
        K.RandomHorizontalFlip(p=0.5),
    ).to(device)
    images = _images(device, batch=4)
    # Replaying sampled parameters makes the augmentation deterministic (its own API for it).
    params = augment.forward_parameters(images.shape)
    return Workload(functools.partial(augment, params=params), (images,)), [augment]


@_register(
    "kornia_canny",
    "kornia",
    "filters",
    "Canny edge detector with hysteresis (iterates until the edge map stops changing)",
)
def _kornia_canny(device: str) -> Built:
    import kornia.filters

    canny = kornia.filters.Canny(low_threshold=0.1, high_threshold=0.2, hysteresis=True)
    return Workload(canny.to(device), (_images(device),)), [canny]


@_register(
    "kornia_warp",
    "kornia",
    "geometry",
    "warp_perspective of images by random homographies",
)
def _kornia_warp(device: str) -> Built:
    from kornia.geometry.transform import warp_perspective

    generator = inputs(2)
    homography = torch.eye(3).repeat(2, 1, 1) + 0.05 * torch.randn(2, 3, 3, generator=generator)
    warp = functools.partial(warp_perspective, M=homography.to(device), dsize=(32, 32))
    return Workload(warp, (_images(device),)), []


# --- gpytorch and botorch: Gaussian processes ------------------------------------------------


def _gp_data(device: str, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, ...]:
    generator = inputs()
    train_x = torch.rand(64, 2, generator=generator, dtype=torch.float64)
    train_y = torch.sin(6 * train_x[:, 0]) * torch.cos(4 * train_x[:, 1])
    train_y = train_y + 0.05 * torch.randn(64, generator=generator, dtype=torch.float64)
    test_x = torch.rand(16, 2, generator=generator, dtype=torch.float64)
    return tuple(t.to(device=device, dtype=dtype) for t in (train_x, train_y, test_x))


@_register(
    "gp_exact_predict",
    "gpytorch",
    "Gaussian process",
    "exact GP posterior mean and variance in eval mode with fast_pred_var",
)
def _gp_exact_predict(device: str) -> Built:
    import gpytorch

    class ExactGP(gpytorch.models.ExactGP):  # a GPyTorch model class is user code by design
        def __init__(self, x: torch.Tensor, y: torch.Tensor, likelihood: Any) -> None:
            super().__init__(x, y, likelihood)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x: torch.Tensor) -> Any:
            return gpytorch.distributions.MultivariateNormal(
                self.mean_module(x), self.covar_module(x)
            )

    train_x, train_y, test_x = _gp_data(device)
    likelihood = gpytorch.likelihoods.GaussianLikelihood().to(device)
    model = ExactGP(train_x, train_y, likelihood).to(device)
    frozen(model, likelihood)

    def predict(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with gpytorch.settings.fast_pred_var():
            posterior = likelihood(model(x))
            return posterior.mean, posterior.variance

    return Workload(predict, (test_x,)), [model, likelihood]


@_register(
    "gp_variational",
    "gpytorch",
    "Gaussian process",
    "variational GP (16 inducing points, Cholesky variational distribution): predictive "
    "mean and variance",
)
def _gp_variational(device: str) -> Built:
    import gpytorch

    class VariationalGP(gpytorch.models.ApproximateGP):  # user code by design
        def __init__(self, inducing: torch.Tensor) -> None:
            distribution = gpytorch.variational.CholeskyVariationalDistribution(len(inducing))
            strategy = gpytorch.variational.VariationalStrategy(
                self, inducing, distribution, learn_inducing_locations=True
            )
            super().__init__(strategy)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.MaternKernel(2.5))

        def forward(self, x: torch.Tensor) -> Any:
            return gpytorch.distributions.MultivariateNormal(
                self.mean_module(x), self.covar_module(x)
            )

    train_x, _, test_x = _gp_data(device)
    model = VariationalGP(train_x[:16].clone()).to(device)
    likelihood = gpytorch.likelihoods.GaussianLikelihood().to(device)
    frozen(model, likelihood)

    def predict(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        posterior = likelihood(model(x))
        return posterior.mean, posterior.variance

    return Workload(predict, (test_x,)), [model, likelihood]


@_register(
    "botorch_qlogei",
    "botorch",
    "Bayesian optimisation",
    "qLogExpectedImprovement of 8 candidate pairs on a SingleTaskGP (float64, fixed Sobol "
    "base samples)",
)
def _botorch_qlogei(device: str) -> Built:
    from botorch.acquisition import qLogExpectedImprovement
    from botorch.models import SingleTaskGP
    from botorch.sampling import SobolQMCNormalSampler

    train_x, train_y, _ = _gp_data(device, torch.float64)
    model = SingleTaskGP(train_x, train_y.unsqueeze(-1))
    frozen(model)
    sampler = SobolQMCNormalSampler(sample_shape=torch.Size([32]), seed=0)
    acquisition = qLogExpectedImprovement(model, best_f=train_y.max(), sampler=sampler)
    candidates = torch.rand(8, 2, 2, generator=inputs(2), dtype=torch.float64).to(device)
    return Workload(acquisition, (candidates,)), [model]


# --- torchdiffeq and torchsde: differential equations ----------------------------------------


class _Drift(nn.Module):
    """dy/dt = f(y): a small MLP (the ODE's right-hand side is user code by design)."""

    def __init__(self, dim: int = 4, hidden: int = 32) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, dim))

    def forward(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.net(y)


def _ode(device: str, **solver: Any) -> Built:
    from torchdiffeq import odeint

    drift = _Drift().to(device)
    frozen(drift)
    y0 = torch.randn(8, 4, generator=inputs()).to(device)
    times = torch.linspace(0.0, 1.0, 5).to(device)
    return Workload(functools.partial(odeint, drift), (y0, times), solver), [drift]


@_register(
    "ode_dopri5",
    "torchdiffeq",
    "neural ODE",
    "adaptive-step odeint (dopri5, rtol 1e-5, atol 1e-6) of an MLP drift to 5 times",
)
def _ode_dopri5(device: str) -> Built:
    return _ode(device, method="dopri5", rtol=1e-5, atol=1e-6)


@_register(
    "ode_rk4",
    "torchdiffeq",
    "neural ODE",
    "fixed-step odeint (rk4, step 0.05) of an MLP drift to 5 times",
)
def _ode_rk4(device: str) -> Built:
    return _ode(device, method="rk4", options={"step_size": 0.05})


class _DiagonalSDE(nn.Module):
    """An Ito SDE with MLP drift and diagonal diffusion (user code by design)."""

    noise_type = "diagonal"
    sde_type = "ito"

    def __init__(self, dim: int = 4, hidden: int = 32) -> None:
        super().__init__()
        self.drift = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, dim))
        self.diffusion = nn.Sequential(nn.Linear(dim, dim), nn.Sigmoid())

    def f(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.drift(y)

    def g(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return 0.1 * self.diffusion(y)


@_register(
    "sde_euler",
    "torchsde",
    "neural SDE",
    "sdeint (Euler-Maruyama, dt 0.05) on a fixed-entropy BrownianInterval",
)
def _sde_euler(device: str) -> Built:
    import torchsde

    sde = _DiagonalSDE().to(device)
    frozen(sde)
    y0 = torch.randn(8, 4, generator=inputs()).to(device)
    times = torch.linspace(0.0, 1.0, 5).to(device)
    # A fixed entropy makes the Brownian motion (and so the solution) the same on every call.
    brownian = torchsde.BrownianInterval(t0=0.0, t1=1.0, size=(8, 4), entropy=0, device=device)
    solve = functools.partial(torchsde.sdeint, sde, bm=brownian, method="euler", dt=0.05)
    return Workload(solve, (y0, times)), [sde]


# --- torch_geometric: graph networks ---------------------------------------------------------


def _random_graph(
    device: str, nodes: int = 32, edges: int = 128, features: int = 16
) -> tuple[torch.Tensor, torch.Tensor]:
    generator = inputs()
    x = torch.randn(nodes, features, generator=generator)
    edge_index = torch.randint(0, nodes, (2, edges), generator=generator)
    return x.to(device), edge_index.to(device)


@_register("pyg_gcn", "torch-geometric", "graph network", "2-layer GCN (torch_geometric GCN)")
def _pyg_gcn(device: str) -> Built:
    from torch_geometric.nn.models import GCN

    net = GCN(in_channels=16, hidden_channels=32, num_layers=2, out_channels=4).to(device)
    frozen(net)
    return Workload(net, _random_graph(device)), [net]


@_register("pyg_gat", "torch-geometric", "graph network", "2-layer GAT, 2 heads")
def _pyg_gat(device: str) -> Built:
    from torch_geometric.nn.models import GAT

    net = GAT(in_channels=16, hidden_channels=32, num_layers=2, out_channels=4, heads=2)
    net = net.to(device)
    frozen(net)
    return Workload(net, _random_graph(device)), [net]


@_register(
    "pyg_graph_unet",
    "torch-geometric",
    "graph network",
    "GraphUNet: GCN layers with TopKPooling and unpooling (depth 2)",
)
def _pyg_graph_unet(device: str) -> Built:
    from torch_geometric.nn.models import GraphUNet

    net = GraphUNet(in_channels=16, hidden_channels=32, out_channels=4, depth=2).to(device)
    frozen(net)
    return Workload(net, _random_graph(device)), [net]


@_register(
    "pyg_topk_pool",
    "torch-geometric",
    "graph network",
    "graph classifier: SAGEConv, TopKPooling, global mean pool over a batch of 4 graphs",
)
def _pyg_topk_pool(device: str) -> Built:
    from torch_geometric.nn import SAGEConv, TopKPooling, global_mean_pool

    class PooledClassifier(nn.Module):  # the usual PyG example shape: user code by design
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = SAGEConv(16, 32)
            self.pool = TopKPooling(32, ratio=0.5)
            self.conv2 = SAGEConv(32, 32)
            self.head = nn.Linear(32, 3)

        def forward(
            self, x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor
        ) -> torch.Tensor:
            x = self.conv1(x, edge_index).relu()
            x, edge_index, _, batch, _, _ = self.pool(x, edge_index, batch=batch)
            x = self.conv2(x, edge_index).relu()
            return self.head(global_mean_pool(x, batch))

    net = PooledClassifier().to(device)
    frozen(net)
    x, edge_index = _random_graph(device, nodes=64, edges=256)
    # four graphs of 16 nodes: keep each edge inside its source node's graph
    edge_index = edge_index % 16 + (edge_index[0] // 16 * 16)
    batch = torch.arange(64, device=device) // 16
    return Workload(net, (x, edge_index, batch)), [net]


# --- normflows: normalizing flows ------------------------------------------------------------


@_register(
    "nf_realnvp",
    "normflows",
    "normalizing flow",
    "RealNVP log_prob (4 affine coupling blocks, 16 dims): base log-density plus a log-det sum",
)
def _nf_realnvp(device: str) -> Built:
    import normflows as nf

    dim = 16  # enough terms in each log-det sum for a fused reduction to reorder them
    flows: list[nn.Module] = []
    for _ in range(4):
        mlp = nf.nets.MLP([dim // 2, 32, 32, dim], init_zeros=False)
        flows.append(nf.flows.AffineCouplingBlock(mlp))
        flows.append(nf.flows.Permute(dim, mode="swap"))
    flow = nf.NormalizingFlow(nf.distributions.DiagGaussian(dim), flows).to(device)
    frozen(flow)
    samples = torch.randn(256, dim, generator=inputs()).to(device)
    return Workload(flow.log_prob, (samples,)), [flow]


@_register(
    "nf_spline",
    "normflows",
    "normalizing flow",
    "neural spline flow log_prob (2 autoregressive rational-quadratic spline layers)",
)
def _nf_spline(device: str) -> Built:
    flow = spline_flow(device)
    samples = 2.0 * torch.randn(128, 4, generator=inputs()).to(device)  # some outside the tails
    return Workload(flow.log_prob, (samples,)), [flow]


def spline_flow(device: str) -> nn.Module:
    import normflows as nf

    flows: list[nn.Module] = []
    for _ in range(2):
        flows.append(nf.flows.AutoregressiveRationalQuadraticSpline(4, 1, 16, init_identity=False))
        flows.append(nf.flows.LULinearPermute(4))
    flow = nf.NormalizingFlow(nf.distributions.DiagGaussian(4), flows).to(device)
    frozen(flow)
    return flow


# --- e3nn: equivariant networks --------------------------------------------------------------


@_register(
    "e3nn_tensor_product",
    "e3nn",
    "equivariant network",
    "spherical harmonics of edge vectors and a FullyConnectedTensorProduct with node features",
)
def _e3nn_tensor_product(device: str) -> Built:
    from e3nn import o3

    irreps_node = o3.Irreps("4x0e + 2x1o")
    irreps_sh = o3.Irreps.spherical_harmonics(2)
    layer = nn.Sequential()  # holds both for the parameter count
    harmonics = o3.SphericalHarmonics(irreps_sh, normalize=True, normalization="component")
    product = o3.FullyConnectedTensorProduct(irreps_node, irreps_sh, "4x0e + 4x1o + 2x2e")
    layer.append(harmonics)
    layer.append(product)
    layer = layer.to(device)
    frozen(layer)

    def equivariant_message(nodes: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
        return product(nodes, harmonics(vectors))

    generator = inputs()
    nodes = torch.randn(64, irreps_node.dim, generator=generator).to(device)
    vectors = torch.randn(64, 3, generator=generator).to(device)
    return Workload(equivariant_message, (nodes, vectors)), [layer]


# --- einops: layers --------------------------------------------------------------------------


@_register(
    "einops_mixer",
    "einops",
    "image classifier",
    "MLP-Mixer from einops Rearrange/Reduce layers and torch layers (2 blocks, 32x32 images)",
)
def _einops_mixer(device: str) -> Built:
    from einops.layers.torch import Rearrange, Reduce

    patch, dim, tokens = 8, 64, 16

    class Residual(nn.Sequential):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + super().forward(x)

    def block() -> list[nn.Module]:
        return [
            Residual(
                nn.LayerNorm(dim),
                Rearrange("b n c -> b c n"),
                nn.Linear(tokens, 2 * tokens),
                nn.GELU(),
                nn.Linear(2 * tokens, tokens),
                Rearrange("b c n -> b n c"),
            ),
            Residual(
                nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim)
            ),
        ]

    net = nn.Sequential(
        Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch, p2=patch),
        nn.Linear(patch * patch * 3, dim),
        *block(),
        *block(),
        nn.LayerNorm(dim),
        Reduce("b n c -> b c", "mean"),
        nn.Linear(dim, 10),
    ).to(device)
    frozen(net)
    return Workload(net, (_images(device),)), [net]


# --- user code around library models (user_code.py) ------------------------------------------


def _user_code() -> ModuleType:
    """user_code.py, imported as `benchmarks.libzoo.user_code` (the advisor loads this file by
    its path, possibly from another working directory)."""
    try:
        return importlib.import_module("benchmarks.libzoo.user_code")
    except ModuleNotFoundError:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))  # the repo root
        return importlib.import_module("benchmarks.libzoo.user_code")


def _user(name: str, library: str, family: str, computes: str) -> None:
    def builder(device: str) -> Built:
        return getattr(_user_code(), name)(device)

    MODELS[name] = LibModel(library, family, computes, builder, user_code=True)


_user(
    "user_layer_loop",
    "monai",
    "user loop over library layers",
    "`for layer in layers: x = layer(x)` over torch convs, a MONAI Gaussian filter (it "
    "breaks) and a kornia unsharp mask",
)
_user(
    "user_lambda_flow",
    "normflows",
    "lambda around a library model",
    "`lambda x: -flow.log_prob(x).mean()` on a neural spline flow",
)
_user(
    "user_eval_step",
    "torchmetrics",
    "user evaluation helper",
    "a user's eval step: monai classifier, cross-entropy, torchmetrics accuracy, a confidence mask",
)
_user(
    "user_moe_lambda",
    "transformers",
    "lambda around a library model",
    "`lambda ids, mask: model(...).logits` on Mixtral with the eager per-expert loop",
)


# --- the tuning / held-out split ---------------------------------------------------------------
# Fixed before any advisor output was seen, by a deterministic rule on the survey
# (`survey.split_models` applies it to survey.json; tests/test_libzoo.py checks these lists
# against it). Groups: each library, and the user-code entries as one group of their own, taken
# in name order. Within a group: the models with graph breaks (a crashing default compile
# counts) sorted by name, then the models without breaks sorted by name. Models alternate
# between the halves, each group starting on the half that so far has fewer models with breaks
# (then fewer models; then tuning). So each half gets about half of the breaking models and
# half of each library's models, and every group of two or more models has some in both.
TUNING_MODELS: tuple[str, ...] = (
    "botorch_qlogei",
    "gp_variational",
    "kornia_canny",
    "monai_swin_unetr",
    "nf_realnvp",
    "pyro_potential",
    "pyro_hmm",
    "pyg_gat",
    "pyg_graph_unet",
    "ode_dopri5",
    "tm_accuracy",
    "tm_ssim_module",
    "sde_euler",
    "user_lambda_flow",
    "user_moe_lambda",
)
HELD_OUT_MODELS: tuple[str, ...] = (
    "e3nn_tensor_product",
    "einops_mixer",
    "gp_exact_predict",
    "kornia_augment",
    "kornia_warp",
    "monai_sliding_window",
    "monai_unet",
    "nf_spline",
    "pyro_svi_elbo",
    "pyg_gcn",
    "pyg_topk_pool",
    "ode_rk4",
    "tm_auroc",
    "user_eval_step",
    "user_layer_loop",
)

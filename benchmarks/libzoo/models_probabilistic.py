"""The library zoo's probabilistic models: probabilistic programming (pyro), Gaussian processes
(gpytorch, botorch) and normalizing flows (normflows). The Pyro model and the GPyTorch model
classes are user code by design: their lines are in this repository."""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch import nn

from advisor import Workload
from benchmarks.libzoo.common import Built, Registry, frozen, inputs

MODELS = Registry()

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


@MODELS.register(
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


@MODELS.register(
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


@MODELS.register(
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


# --- gpytorch and botorch: Gaussian processes ------------------------------------------------


def _gp_data(device: str, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, ...]:
    generator = inputs()
    train_x = torch.rand(64, 2, generator=generator, dtype=torch.float64)
    train_y = torch.sin(6 * train_x[:, 0]) * torch.cos(4 * train_x[:, 1])
    train_y = train_y + 0.05 * torch.randn(64, generator=generator, dtype=torch.float64)
    test_x = torch.rand(16, 2, generator=generator, dtype=torch.float64)
    return tuple(t.to(device=device, dtype=dtype) for t in (train_x, train_y, test_x))


@MODELS.register(
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


@MODELS.register(
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


@MODELS.register(
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


# --- normflows: normalizing flows ------------------------------------------------------------


@MODELS.register(
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


@MODELS.register(
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

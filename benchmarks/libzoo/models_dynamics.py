"""The library zoo's differential equations (torchdiffeq, torchsde): their drift and diffusion
are user code by design, solved by the library."""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch import nn

from advisor import Workload
from benchmarks.libzoo.common import Built, Registry, frozen, inputs

MODELS = Registry()

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


@MODELS.register(
    "ode_dopri5",
    "torchdiffeq",
    "neural ODE",
    "adaptive-step odeint (dopri5, rtol 1e-5, atol 1e-6) of an MLP drift to 5 times",
)
def _ode_dopri5(device: str) -> Built:
    return _ode(device, method="dopri5", rtol=1e-5, atol=1e-6)


@MODELS.register(
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


@MODELS.register(
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

"""Targets used by the loader and CLI tests."""

import torch

from advisor import Workload


def factory(device: str):
    return torch.nn.functional.relu, (torch.randn(4, device=device),)


def as_workload(device: str) -> Workload:
    return Workload(torch.add, (torch.ones(2, device=device),), {"other": 1.0}, "adder")


def single_arg(device: str):
    return torch.sin, torch.ones(2, device=device)


def raises(device: str):
    raise RuntimeError("no weights here\nmore text")


def non_callable(device: str):
    return 42, (torch.ones(1),)


def bare_callable(device: str):
    return torch.sin


def wrong_shape(device: str):
    return (torch.sin, (torch.ones(1),), {}, "extra")


def eager_fails(device: str):
    return (lambda x: x @ x), (torch.ones(2, 3),)


NOT_A_FACTORY = 3


def device_agnostic():
    """A factory with no device argument: the loader moves what it returns."""
    model = torch.nn.Linear(4, 2)
    return Workload(model, (torch.ones(3, 4),), {"extra": [torch.zeros(1), 2.0]}, "agnostic")


def device_agnostic_raises():
    raise ValueError("no data")


def sized(device: str, size: int = 2, scale: float = 1.0):
    """A factory with parameters (`--param size=3`)."""
    return torch.mul, (torch.ones(size, device=device), scale)

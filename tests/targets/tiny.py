"""A tiny workload with one graph break, for the real end-to-end CLI test."""

import torch


def scale_and_log(x: torch.Tensor) -> torch.Tensor:
    y = torch.tanh(x @ x.T)
    print("step", end="\r")  # graph break: GB0059
    return (y * 2).sum(-1)


def factory(device: str):
    torch.manual_seed(0)
    return scale_and_log, (torch.randn(32, 32, device=device),)

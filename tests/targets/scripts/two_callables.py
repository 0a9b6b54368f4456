"""Two compiled callables: a module compiled with torch.compile(module) (the hot one) and a
small function compiled with the decorator; eager backend (tests check the survey)."""

import torch


class Heavy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(128, 128) for _ in range(6))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x).tanh()
        return x


@torch.compile(backend="eager")
def light(x: torch.Tensor) -> torch.Tensor:
    return x.sum()


heavy = torch.compile(Heavy(), backend="eager")
x = torch.randn(64, 128)
with torch.no_grad():
    for _ in range(40):
        light(heavy(x))

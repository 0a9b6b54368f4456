"""A training loop whose optimizer is held by a wrapper, as accelerate's `AcceleratedOptimizer`
holds it (`accelerator.prepare(optimizer)`): the loop steps the wrapper, which steps the torch
optimizer. The advisor times one loop iteration per unit and plans the optimizer placements
(fused, compiled `opt.step`) for the torch optimizer inside."""

import torch


class WrappedOptimizer:
    """What a training framework hands the loop: the torch optimizer one attribute deep."""

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self.optimizer = optimizer

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

    def step(self) -> None:
        self.optimizer.step()


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.Sequential(
            *(torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU()) for _ in range(6))
        )
        self.head = torch.nn.Linear(64, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.layers(x))


def main() -> None:
    torch.manual_seed(0)
    model = Net()
    model.compile()
    opt = WrappedOptimizer(torch.optim.AdamW(model.parameters(), lr=1e-3))
    x, y = torch.randn(32, 64), torch.randn(32, 1)
    for _ in range(200_000):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()

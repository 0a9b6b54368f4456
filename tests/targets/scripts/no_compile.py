"""A training loop that never calls torch.compile."""

import torch


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x).relu()


def train_step(model: Net, x: torch.Tensor) -> float:
    return float(model(x).sum())


model = Net()
x = torch.randn(4, 8)
for _ in range(5):
    train_step(model, x)

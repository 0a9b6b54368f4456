"""A training loop fed by a DataLoader with worker processes: `model.compile()`, AdamW,
argparse flags; the advisor times one iteration of it (from one forward to the next)."""

import argparse
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=40)
args = parser.parse_args()
# a banner on stderr, as a training framework prints one in every process that runs the script
print("TRAIN-LOADER BANNER: starting", file=sys.stderr)


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(16, 32), torch.nn.Linear(32, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.fc1(x).relu())


torch.manual_seed(0)
model = Net()
model.compile()
optimizer = torch.optim.AdamW(model.parameters())
data = TensorDataset(torch.randn(256, 16), torch.randn(256, 1))
loader = DataLoader(data, batch_size=16, num_workers=2, persistent_workers=True)
for _ in range(args.epochs):
    for x, y in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
print(f"final loss {loss.item():.4f}")

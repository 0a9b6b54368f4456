"""The library zoo's graph and equivariant networks (torch_geometric, e3nn). `models.py` lists
them with the rest of the zoo."""

from __future__ import annotations

import torch
from torch import nn

from advisor import Workload
from benchmarks.libzoo.common import Built, Registry, frozen, inputs

MODELS = Registry()

# --- torch_geometric: graph networks ---------------------------------------------------------


def _random_graph(
    device: str, nodes: int = 32, edges: int = 128, features: int = 16
) -> tuple[torch.Tensor, torch.Tensor]:
    generator = inputs()
    x = torch.randn(nodes, features, generator=generator)
    edge_index = torch.randint(0, nodes, (2, edges), generator=generator)
    return x.to(device), edge_index.to(device)


@MODELS.register("pyg_gcn", "torch-geometric", "graph network", "2-layer GCN (torch_geometric GCN)")
def _pyg_gcn(device: str) -> Built:
    from torch_geometric.nn.models import GCN

    net = GCN(in_channels=16, hidden_channels=32, num_layers=2, out_channels=4).to(device)
    frozen(net)
    return Workload(net, _random_graph(device)), [net]


@MODELS.register("pyg_gat", "torch-geometric", "graph network", "2-layer GAT, 2 heads")
def _pyg_gat(device: str) -> Built:
    from torch_geometric.nn.models import GAT

    net = GAT(in_channels=16, hidden_channels=32, num_layers=2, out_channels=4, heads=2)
    net = net.to(device)
    frozen(net)
    return Workload(net, _random_graph(device)), [net]


@MODELS.register(
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


@MODELS.register(
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


# --- e3nn: equivariant networks --------------------------------------------------------------


@MODELS.register(
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

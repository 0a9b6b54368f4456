"""Real third-party models trained for one step per call: the training counterpart of
benchmarks/zoo, for validating the advisor on training workloads.

Every model is tiny and random-init (no download), built from its library's own classes, with
random seeded inputs and targets, and trained with `torch.optim.AdamW` (the default
implementation: a per-parameter loop on CPU, `foreach` on a GPU). One call of the workload is
one step: `zero_grad(set_to_none=True)`, forward, loss, `loss.backward()`, `optimizer.step()`,
returning the detached loss. Each call updates the weights, so the loss changes from call to
call; models with dropout or random augmentation are random per call too.

Two forms, the two places a user puts `torch.compile` in a training loop:
- "module": the model is compiled in place (`model.compile()`), the step runs eagerly around
  it (`Workload(step, ..., compiled_module=model)`); a loss computed outside the model (the
  graph and vision models) stays eager;
- "step": the whole step is compiled (`torch.compile(step)`), optimizer included.

    advisor run benchmarks/trainzoo/models.py:build --param model=gcn --param form=step

Libraries: transformers (configs from benchmarks/zoo/hf_models.py), torch_geometric, monai,
kornia and x-transformers (the `trainzoo` extra). timm is not here: it requires torchvision,
and torchvision 0.28.0 (the release for torch 2.13) failed on import against the CPU build of
torch 2.13.0 ("operator torchvision::nms does not exist").
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch import nn

from advisor import Workload

FORMS = ("module", "step")
CLASSES = 4  # classifiers' labels (sequences, images)
LEARNING_RATE = 1e-3
LossFn = Callable[[Any, Mapping[str, torch.Tensor]], torch.Tensor]


@dataclass(frozen=True)
class TrainingCase:
    """One model's training setup: the model, its forward keyword arguments, the targets the
    loss reads, and the loss from the forward's output and the targets."""

    model: nn.Module
    inputs: dict[str, torch.Tensor]
    targets: dict[str, torch.Tensor]
    loss: LossFn


# --- transformers ------------------------------------------------------------------------------


def _hf_loss(output: Any, targets: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """Hugging Face models compute their loss from `labels` themselves."""
    return output.loss


def _hf_models() -> ModuleType:
    """benchmarks/zoo/hf_models.py, imported as `benchmarks.zoo.hf_models` (the advisor loads
    this file by its path, possibly from another working directory, as `advisor sweep` does)."""
    try:
        return importlib.import_module("benchmarks.zoo.hf_models")
    except ModuleNotFoundError:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))  # the repo root
        return importlib.import_module("benchmarks.zoo.hf_models")


def _hf_case(spec_name: str, model_class: str, labels: str, gen: torch.Generator) -> TrainingCase:
    """A zoo model's config (benchmarks/zoo/hf_models.py) with a training head: `labels` is
    "tokens" (a causal LM, labels = input_ids) or "classes" (sequence classification)."""
    import transformers

    hf_models = _hf_models()
    spec = hf_models.MODELS[spec_name]
    options = dict(spec.options)
    if labels == "classes":
        options["num_labels"] = CLASSES
    config = getattr(transformers, spec.config)(**options)
    model = getattr(transformers, model_class)(config)
    inputs = {**hf_models._inputs(spec, config, gen), **spec.call}
    if labels == "tokens":
        inputs["labels"] = inputs["input_ids"]
    else:
        inputs["labels"] = torch.randint(0, CLASSES, (hf_models.BATCH,), generator=gen)
    return TrainingCase(model, inputs, {}, _hf_loss)


def _llama(gen: torch.Generator) -> TrainingCase:
    return _hf_case("llama", "LlamaForCausalLM", "tokens", gen)


def _bert(gen: torch.Generator) -> TrainingCase:
    return _hf_case("bert", "BertForSequenceClassification", "classes", gen)


def _xlm(gen: torch.Generator) -> TrainingCase:
    return _hf_case("xlm", "XLMForSequenceClassification", "classes", gen)


def _jetmoe(gen: torch.Generator) -> TrainingCase:
    return _hf_case("jetmoe", "JetMoeForCausalLM", "tokens", gen)


# --- torch_geometric ---------------------------------------------------------------------------

NODES, EDGES, NODE_FEATURES, NODE_CLASSES, GNN_HIDDEN = 256, 1024, 32, 8, 64


def _node_loss(logits: torch.Tensor, targets: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """Semi-supervised node classification: the loss over the training nodes only."""
    mask = targets["train_mask"]
    return nn.functional.cross_entropy(logits[mask], targets["y"][mask])


def _graph_case(model: nn.Module, gen: torch.Generator) -> TrainingCase:
    """A random graph (uniform random edges) with node features, labels and a 50% train mask."""
    inputs = {
        "x": torch.randn(NODES, NODE_FEATURES, generator=gen),
        "edge_index": torch.randint(0, NODES, (2, EDGES), generator=gen),
    }
    targets = {
        "y": torch.randint(0, NODE_CLASSES, (NODES,), generator=gen),
        "train_mask": torch.rand(NODES, generator=gen) < 0.5,
    }
    return TrainingCase(model, inputs, targets, _node_loss)


def _gcn(gen: torch.Generator) -> TrainingCase:
    from torch_geometric.nn import GCN

    model = GCN(NODE_FEATURES, GNN_HIDDEN, num_layers=2, out_channels=NODE_CLASSES, dropout=0.5)
    return _graph_case(model, gen)


def _graphsage(gen: torch.Generator) -> TrainingCase:
    from torch_geometric.nn import GraphSAGE

    model = GraphSAGE(
        NODE_FEATURES, GNN_HIDDEN, num_layers=2, out_channels=NODE_CLASSES, dropout=0.5
    )
    return _graph_case(model, gen)


# --- monai -------------------------------------------------------------------------------------

IMAGE_BATCH, IMAGE_SIZE, SEG_CLASSES = 4, 32, 3


def _monai_unet(gen: torch.Generator) -> TrainingCase:
    """2D segmentation: MONAI's UNet (residual units) with its Dice + cross-entropy loss."""
    from monai.losses import DiceCELoss
    from monai.networks.nets import UNet

    model = UNet(
        spatial_dims=2,
        in_channels=1,
        out_channels=SEG_CLASSES,
        channels=(8, 16, 32),
        strides=(2, 2),
        num_res_units=1,
    )
    dice_ce = DiceCELoss(to_onehot_y=True, softmax=True)
    inputs = {"x": torch.randn(IMAGE_BATCH, 1, IMAGE_SIZE, IMAGE_SIZE, generator=gen)}
    labels = torch.randint(0, SEG_CLASSES, (IMAGE_BATCH, 1, IMAGE_SIZE, IMAGE_SIZE), generator=gen)

    def loss(logits: torch.Tensor, targets: Mapping[str, torch.Tensor]) -> torch.Tensor:
        return dice_ce(logits, targets["labels"])

    return TrainingCase(model, inputs, {"labels": labels}, loss)


def _monai_vit(gen: torch.Generator) -> TrainingCase:
    """Image classification: MONAI's ViT with its classification token; it returns
    (logits, hidden states)."""
    from monai.networks.nets import ViT

    model = ViT(
        in_channels=1,
        img_size=(IMAGE_SIZE, IMAGE_SIZE),
        patch_size=(8, 8),
        spatial_dims=2,
        hidden_size=64,
        mlp_dim=128,
        num_layers=2,
        num_heads=4,
        classification=True,
        num_classes=CLASSES,
    )
    inputs = {"x": torch.randn(IMAGE_BATCH * 4, 1, IMAGE_SIZE, IMAGE_SIZE, generator=gen)}
    labels = torch.randint(0, CLASSES, (IMAGE_BATCH * 4,), generator=gen)

    def loss(output: Any, targets: Mapping[str, torch.Tensor]) -> torch.Tensor:
        return nn.functional.cross_entropy(output[0], targets["labels"])

    return TrainingCase(model, inputs, {"labels": labels}, loss)


# --- kornia ------------------------------------------------------------------------------------


class AugmentedConvNet(nn.Module):
    """A small CNN that augments its batch on the device while training, with kornia's
    augmentation modules in the forward (the "GPU augmentation" pattern)."""

    def __init__(self) -> None:
        super().__init__()
        import kornia.augmentation as K

        self.augment = K.AugmentationSequential(
            K.RandomHorizontalFlip(),
            K.RandomAffine(degrees=10.0, translate=(0.1, 0.1), p=0.5),
            K.ColorJiggle(0.1, 0.1, 0.1, p=0.5),
        )
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(32, CLASSES)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if self.training:
            images = self.augment(images)
        return self.head(self.features(images).flatten(1))


def _kornia_cnn(gen: torch.Generator) -> TrainingCase:
    inputs = {"images": torch.rand(IMAGE_BATCH * 4, 3, IMAGE_SIZE, IMAGE_SIZE, generator=gen)}
    labels = torch.randint(0, CLASSES, (IMAGE_BATCH * 4,), generator=gen)

    def loss(logits: torch.Tensor, targets: Mapping[str, torch.Tensor]) -> torch.Tensor:
        return nn.functional.cross_entropy(logits, targets["labels"])

    return TrainingCase(AugmentedConvNet(), inputs, {"labels": labels}, loss)


# --- x-transformers ----------------------------------------------------------------------------


def _x_transformers_lm(gen: torch.Generator) -> TrainingCase:
    """A decoder LM in x-transformers' wrapper, which shifts the tokens and returns the loss."""
    from x_transformers import AutoregressiveWrapper, Decoder, TransformerWrapper

    lm = TransformerWrapper(
        num_tokens=512, max_seq_len=64, attn_layers=Decoder(dim=64, depth=2, heads=4)
    )
    inputs = {"x": torch.randint(0, 512, (4, 33), generator=gen)}
    return TrainingCase(AutoregressiveWrapper(lm), inputs, {}, _returned_loss)


def _returned_loss(loss: torch.Tensor, targets: Mapping[str, torch.Tensor]) -> torch.Tensor:
    return loss


# --- the factory -------------------------------------------------------------------------------

# name: (library, builder)
MODELS: dict[str, tuple[str, Callable[[torch.Generator], TrainingCase]]] = {
    "llama": ("transformers", _llama),
    "bert": ("transformers", _bert),
    "xlm": ("transformers", _xlm),
    "jetmoe": ("transformers", _jetmoe),
    "gcn": ("torch_geometric", _gcn),
    "graphsage": ("torch_geometric", _graphsage),
    "monai_unet": ("monai", _monai_unet),
    "monai_vit": ("monai", _monai_vit),
    "kornia_cnn": ("kornia", _kornia_cnn),
    "x_transformers_lm": ("x_transformers", _x_transformers_lm),
}


def _split() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Chosen before any result: models sorted by (library, name), the even positions are the
    tuning half and the odd ones held out, so each library with two or more models has models
    in both halves."""
    ordered = sorted(MODELS, key=lambda name: (MODELS[name][0], name))
    return tuple(ordered[0::2]), tuple(ordered[1::2])


TUNING_MODELS, HELD_OUT_MODELS = _split()


def training_step(
    model: nn.Module, loss_fn: LossFn, optimizer: torch.optim.Optimizer
) -> Callable[[dict[str, torch.Tensor], dict[str, torch.Tensor]], torch.Tensor]:
    def step(inputs: dict[str, torch.Tensor], targets: dict[str, torch.Tensor]) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(**inputs), targets)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step


def build(device: str = "cpu", model: str = "gcn", form: str = "module") -> Workload:
    """The advisor factory: model `model` trained one AdamW step per call on `device`, with the
    model compiled in place ("module") or the whole step compiled ("step")."""
    if model not in MODELS:
        raise ValueError(f"unknown trainzoo model '{model}' (known: {', '.join(sorted(MODELS))})")
    if form not in FORMS:
        raise ValueError(f"unknown form '{form}' (known: {', '.join(FORMS)})")
    torch.manual_seed(0)
    case = MODELS[model][1](torch.Generator().manual_seed(1))
    module = case.model.to(device).train()
    inputs = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in case.inputs.items()}
    targets = {k: v.to(device) for k, v in case.targets.items()}
    optimizer = torch.optim.AdamW(module.parameters(), lr=LEARNING_RATE)
    step = training_step(module, case.loss, optimizer)
    name = f"trainzoo.{model}.{form}"
    if form == "module":
        return Workload(step, (inputs, targets), name=name, compiled_module=module)
    return Workload(step, (inputs, targets), name=name)

"""Models and pre-built batches shared by the example scripts and their factory form
(factories.py), so a script's loop and its factory run the same weights on the same inputs.

Each `*_setup` seeds torch itself, then builds the model and then the batches, in that order:
the scripts and the factories call it with the same seed and get identical work.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

SEED = 0
NUM_BATCHES = 8  # the loops cycle through this many pre-built batches

# The text classifier (infer_loop.py).
VOCAB = 1000
HIDDEN = 64
HEADS = 4
LAYERS = 2
SEQ_LEN = 32
BATCH = 8
CLASSES = 4


class SelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, hidden = x.shape
        q, k, v = self.qkv(x).view(batch, seq, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v)
        return self.out(attended.transpose(1, 2).reshape(batch, seq, hidden))


class Block(nn.Module):
    """A pre-norm transformer block: attention then an MLP, each with a residual."""

    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden)
        self.attn = SelfAttention(hidden, heads)
        self.norm2 = nn.LayerNorm(hidden)
        self.mlp = nn.Sequential(
            nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TextClassifier(nn.Module):
    """Token ids (batch, seq) -> class logits (batch, classes)."""

    def __init__(
        self,
        vocab: int = VOCAB,
        hidden: int = HIDDEN,
        heads: int = HEADS,
        layers: int = LAYERS,
        max_len: int = SEQ_LEN,
        classes: int = CLASSES,
    ) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_len, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.embed(tokens) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        # A sanity check left in from debugging: Python needs the tensor's value as a bool on
        # every call, which stops the compiled graph here.
        if not torch.isfinite(x).all():  # graph-break
            raise FloatingPointError("non-finite activations after the transformer blocks")
        return self.head(self.norm(x).mean(dim=1))


def classifier_setup(
    device: str, seed: int = SEED, num_batches: int = NUM_BATCHES
) -> tuple[TextClassifier, list[torch.Tensor]]:
    """The classifier in eval mode and its token batches, on `device`."""
    torch.manual_seed(seed)
    model = TextClassifier().to(device).eval()
    batches = [torch.randint(0, VOCAB, (BATCH, SEQ_LEN)).to(device) for _ in range(num_batches)]
    return model, batches


# The Hugging Face model (train_loop.py): a tiny random-init BERT, built from a config.
BERT_VOCAB = 1000
BERT_HIDDEN = 64
BERT_LAYERS = 2
BERT_HEADS = 2
BERT_SEQ_LEN = 32
BERT_BATCH = 8
BERT_LABELS = 3
LEARNING_RATE = 1e-3


def bert_setup(
    device: str, seed: int = SEED, num_batches: int = NUM_BATCHES
) -> tuple[nn.Module, list[dict[str, torch.Tensor]]]:
    """A BertForSequenceClassification in train mode and its labelled batches, on `device`.
    Each batch is a padded one: its attention mask ends in a few zeros per row."""
    from transformers import BertConfig, BertForSequenceClassification  # slow import: only here

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=BERT_VOCAB,
        hidden_size=BERT_HIDDEN,
        num_hidden_layers=BERT_LAYERS,
        num_attention_heads=BERT_HEADS,
        intermediate_size=4 * BERT_HIDDEN,
        max_position_embeddings=BERT_SEQ_LEN,
        num_labels=BERT_LABELS,
        # Set up front: left None, the first forward sets it on the config, and that change
        # recompiles the model on the second step.
        problem_type="single_label_classification",
    )
    model = BertForSequenceClassification(config).to(device).train()
    batches = []
    for _ in range(num_batches):
        lengths = torch.randint(BERT_SEQ_LEN // 2, BERT_SEQ_LEN + 1, (BERT_BATCH, 1))
        mask = (torch.arange(BERT_SEQ_LEN) < lengths).long()
        input_ids = torch.randint(1, BERT_VOCAB, (BERT_BATCH, BERT_SEQ_LEN)) * mask  # pad id 0
        labels = torch.randint(0, BERT_LABELS, (BERT_BATCH,))
        batch = {"input_ids": input_ids, "attention_mask": mask, "labels": labels}
        batches.append({name: value.to(device) for name, value in batch.items()})
    return model, batches


# The sampling step (decorated.py): logits of a next-token step, as a decoder would produce.
SAMPLE_BATCH = 16
SAMPLE_VOCAB = 1000


def logits_batches(
    device: str, seed: int = SEED, num_batches: int = NUM_BATCHES
) -> list[torch.Tensor]:
    torch.manual_seed(seed)
    return [(3.0 * torch.randn(SAMPLE_BATCH, SAMPLE_VOCAB)).to(device) for _ in range(num_batches)]

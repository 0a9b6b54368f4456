"""Held-out workloads: tiny random-init models and user code around pip libraries that no other
part of this project uses (zuko, geomloss, pytorch-metric-learning, vector-quantize-pytorch,
torch-dct, pytorch-msssim, rotary-embedding-torch, ema-pytorch, fast-pytorch-kmeans; the
`heldout` extra in pyproject.toml). Nothing here was looked at while the advisor was tuned.

    advisor run benchmarks/heldout/models.py:build --param model=ema_train

Every workload is seeded (`torch.manual_seed(0)` before it is built; inputs from a
`torch.Generator` seeded with 1), small (one eager call takes about 0.3-20 ms on one CPU
thread) and random-init (no downloads). Inference workloads return the same output on every
call; a training workload is one optimizer step per call (`zero_grad`, forward, loss,
`backward`, `AdamW.step`) and returns the detached loss, so its output changes from call to
call (the first call's output is the same in every variant).

Each workload has its own factory here (`models.py:NAME`, taking `device` and ignoring other
keyword arguments, so `reference_ab --param` is harmless) and `build(device, model=NAME)` for
the sweep manifest. A workload's docstring says where its graph breaks are (library or user
code, file:line and kind, as captured with torch 2.13.0) and the hand-written fixes, which live
in `fixes.py`; `variants.py` lists every reference variant of every workload. Each library is
imported inside its builders, so a missing library fails only its workloads.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _repository_importable() -> None:
    """Put the repository on sys.path when this file is loaded by its path from elsewhere
    (`advisor run benchmarks/heldout/models.py:build`), so that `benchmarks.*` imports."""
    if importlib.util.find_spec("benchmarks") is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))


_repository_importable()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from advisor import Workload  # noqa: E402
from benchmarks.heldout.common import adamw, frozen, inputs, mlp  # noqa: E402

# --- geomloss ----------------------------------------------------------------------------------

SINKHORN = {"loss": "sinkhorn", "p": 2, "blur": 0.05, "scaling": 0.7, "backend": "tensorized"}


def point_clouds(device: str, n: int = 160) -> tuple[torch.Tensor, torch.Tensor]:
    gen = inputs()
    x = torch.randn(n, 3, generator=gen)
    y = 0.5 * torch.randn(n, 3, generator=gen) + 1.0
    return x.to(device), y.to(device)


def geomloss_sinkhorn(device: str = "cpu", **_: Any) -> Workload:
    """geomloss `SamplesLoss("sinkhorn")` between two 160-point clouds in 3-D (inference): the
    library's own module is what is compiled.

    Breaks (library): geomloss/_legacy/sinkhorn_divergence.py:111 `Tensor.item()` (the cloud's
    diameter, in `max_diameter`, reached from `scaling_parameters` :158), then the epsilon
    schedule is built with numpy/Python floats from it; the same `.item()` is hit again in each
    resumed frame (6 breaks, 7 graphs).
    Fixes: knob `capture_scalar_outputs`; code: pass the known `diameter=` to `SamplesLoss`
    (computed once at setup; `fixes.py:geomloss_sinkhorn_diameter`); eager."""
    from geomloss import SamplesLoss

    torch.manual_seed(0)
    loss = SamplesLoss(**SINKHORN)
    return Workload(loss, point_clouds(device), name="heldout.geomloss_sinkhorn")


class OTAligner(nn.Module):
    """User code: a learned projection of one cloud, scored by an optimal-transport loss that
    the user builds inside forward on every call."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        from geomloss import SamplesLoss

        ot = SamplesLoss(**SINKHORN)  # setup inside the hot call: the same object every time
        return ot(self.proj(x), y)


def geomloss_inline(device: str = "cpu", **_: Any) -> Workload:
    """User module `OTAligner` (this file) that constructs geomloss's `SamplesLoss` inside its
    forward on every call, then applies it to a projected cloud (inference).

    Breaks: the library's `.item()` (geomloss/_legacy/sinkhorn_divergence.py:111) reached from
    the user's forward; the per-call construction (user code, models.py `OTAligner.forward`)
    is setup work that is traced/run again on every call.
    Fixes: hoist (`SamplesLoss` built once in `__init__`, `fixes.py:geomloss_inline_hoist`),
    hoist plus the knob `capture_scalar_outputs`, the knob alone, eager."""
    torch.manual_seed(0)
    model = OTAligner().to(device)
    frozen(model)
    return Workload(model, point_clouds(device), name="heldout.geomloss_inline")


# --- pytorch-metric-learning --------------------------------------------------------------------


def metric_batch(device: str) -> tuple[torch.Tensor, torch.Tensor]:
    gen = inputs()
    labels = torch.arange(64) % 8
    centres = torch.randn(8, 32, generator=gen)
    x = centres[labels] + 0.8 * torch.randn(64, 32, generator=gen)
    return x.to(device), labels.to(device)


def pml_parts(device: str) -> tuple[nn.Module, Any, Any]:
    from pytorch_metric_learning import losses, miners

    torch.manual_seed(0)
    embedder = mlp(32, 64, 16).to(device).train()
    return embedder, miners.MultiSimilarityMiner(epsilon=0.1), losses.TripletMarginLoss(0.2)


def pml_step(embedder: nn.Module, miner: Any, loss_fn: Any, optimizer: Any) -> Callable:
    def step(x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        emb = embedder(x)
        pairs = miner(emb, labels)
        loss = loss_fn(emb, labels, pairs)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step


def pml_triplet_train(device: str = "cpu", **_: Any) -> Workload:
    """pytorch-metric-learning: one AdamW step of a 2-layer embedding MLP with a
    `MultiSimilarityMiner` and a `TripletMarginLoss` (training, the whole step compiled).

    Breaks (library): dynamic-shape ops (`nonzero`/boolean indexing) in
    pytorch_metric_learning/utils/loss_and_miner_utils.py:50 (from miners/
    multi_similarity_miner.py:17), miners/multi_similarity_miner.py:44 and :47,
    utils/loss_and_miner_utils.py:241 and reducers/threshold_reducer.py:36 (about 9 breaks).
    Fixes: knob `capture_dynamic_output_shape_ops` (and with `capture_scalar_outputs`);
    regional (only the embedder compiled, `compiled_module`); disable (miner and loss behind
    `torch.compiler.disable`); fused AdamW; eager."""
    embedder, miner, loss_fn = pml_parts(device)
    step = pml_step(embedder, miner, loss_fn, adamw(embedder))
    return Workload(step, metric_batch(device), name="heldout.pml_triplet_train")


# --- vector-quantize-pytorch -------------------------------------------------------------------


class VQAutoEncoder(nn.Module):
    def __init__(self) -> None:
        from vector_quantize_pytorch import VectorQuantize

        super().__init__()
        self.encoder = mlp(16, 64, 32)
        self.vq = VectorQuantize(dim=32, codebook_size=64, decay=0.8, commitment_weight=1.0)
        self.decoder = mlp(32, 64, 16)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        quantized, _, commit = self.vq(self.encoder(x))
        return self.decoder(quantized), commit.sum()


def vq_parts(device: str) -> tuple[VQAutoEncoder, torch.Tensor]:
    torch.manual_seed(0)
    model = VQAutoEncoder().to(device).train()
    return model, torch.randn(4, 64, 16, generator=inputs()).to(device)


def vq_step(model: VQAutoEncoder, optimizer: Any) -> Callable:
    def step(x: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        recon, commit = model(x)
        loss = F.mse_loss(recon, x) + commit
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step


def vq_train(device: str = "cpu", **_: Any) -> Workload:
    """vector-quantize-pytorch: one AdamW step of an MLP autoencoder with a `VectorQuantize`
    bottleneck (EMA codebook, commitment loss) (training, the whole step compiled).

    Breaks (library): vector_quantize_pytorch/vector_quantize_pytorch.py:462
    `if self.initted:` a branch on a tensor buffer (data-dependent), in `init_embed_` called
    from :746 on every forward; the resumed frames break again on the same line.
    Fixes: patch (the library's `init_embed_` is a no-op once initted; replaced on the
    instance, `fixes.py:vq_train_patch`); disable (the quantizer behind
    `torch.compiler.disable`); regional (encoder and decoder compiled, the quantizer eager);
    fused AdamW; eager."""
    model, x = vq_parts(device)
    return Workload(vq_step(model, adamw(model)), (x,), name="heldout.vq_train")


# --- torch-dct ----------------------------------------------------------------------------------


class DCTCompressor(nn.Module):
    """User code: JPEG-like coding of 8x8 blocks. Each block's DCT energy picks its quantizer
    step in a Python if/elif/else, one block at a time."""

    def __init__(self, high: float = 40.0, low: float = 8.0) -> None:
        super().__init__()
        self.high, self.low = high, low

    def forward(self, blocks: torch.Tensor) -> torch.Tensor:
        import torch_dct

        coeffs = torch_dct.dct_2d(blocks, norm="ortho")
        out = []
        for i in range(coeffs.shape[0]):
            c = coeffs[i]
            energy = c.pow(2).sum()
            if energy > self.high:  # data-dependent branch (user code)
                q = torch.round(c / 0.5) * 0.5
            elif energy > self.low:
                q = torch.round(c / 2.0) * 2.0
            else:
                q = torch.zeros_like(c)
            out.append(q)
        return torch_dct.idct_2d(torch.stack(out), norm="ortho")


def dct_blocks(device: str) -> torch.Tensor:
    gen = inputs()
    scale = torch.rand(48, 1, 1, generator=gen) * 1.5
    return (scale * torch.randn(48, 8, 8, generator=gen)).to(device)


def dct_compress(device: str = "cpu", **_: Any) -> Workload:
    """torch-dct: user module `DCTCompressor` (this file) quantizing 48 8x8 blocks in the DCT
    domain, the step chosen per block by its energy (inference).

    Breaks (user code): models.py `DCTCompressor.forward`, `if energy > self.high:` a
    data-dependent branch inside a Python loop over blocks (Dynamo skips the looping frame);
    torch_dct itself (torch.fft) traces whole.
    Fixes: code (the branch as `torch.where` over all blocks at once,
    `fixes.py:dct_compress_where`, also under fullgraph); eager."""
    torch.manual_seed(0)
    model = DCTCompressor().to(device)
    return Workload(model, (dct_blocks(device),), name="heldout.dct_compress")


# --- pytorch-msssim -----------------------------------------------------------------------------


def conv_autoencoder() -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(16, 16, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(16, 3, 3, padding=1),
        nn.Sigmoid(),
    )


def msssim_parts(device: str) -> tuple[nn.Sequential, torch.Tensor]:
    torch.manual_seed(0)
    model = conv_autoencoder().to(device).train()
    return model, torch.rand(2, 3, 32, 32, generator=inputs()).to(device)


def msssim_step(model: nn.Module, optimizer: Any, history: list) -> Callable:
    from pytorch_msssim import SSIM

    def step(images: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        recon = model(images)
        criterion = SSIM(data_range=1.0, channel=3, win_size=7)  # setup inside the hot call
        loss = 1.0 - criterion(recon, images)
        loss.backward()
        optimizer.step()
        history.append(loss.item())  # user bookkeeping: a Python float per step
        return loss.detach()

    return step


def msssim_ae_train(device: str = "cpu", **_: Any) -> Workload:
    """pytorch-msssim: one AdamW step of a small conv autoencoder on 2 32x32 images with an
    SSIM loss (training, the whole step compiled).

    Breaks (user code, models.py `msssim_step.step`): `history.append(loss.item())`, a
    `Tensor.item()` for a Python loss log after the optimizer step; the `SSIM` module (its
    Gaussian window) is constructed inside the step on every call (setup in the hot call).
    Fixes: hoist (`SSIM` built once outside the step), code (keep the loss tensor in the log,
    `loss.detach()`), both; knob `capture_scalar_outputs`; regional (only the autoencoder
    compiled); fused AdamW; eager."""
    model, images = msssim_parts(device)
    step = msssim_step(model, adamw(model), [])
    return Workload(step, (images,), name="heldout.msssim_ae_train")


# --- rotary-embedding-torch ---------------------------------------------------------------------


class RotaryAttention(nn.Module):
    """User code: self-attention with rotary position embeddings; it masks only when the mask
    has a masked position, and keeps each head's peak attention weight in a Python list."""

    def __init__(self, dim: int = 64, heads: int = 4) -> None:
        from rotary_embedding_torch import RotaryEmbedding

        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.rotary = RotaryEmbedding(dim=dim // heads // 2)
        self.head_peaks: list[float] = []

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q = self.rotary.rotate_queries_or_keys(q)
        k = self.rotary.rotate_queries_or_keys(k)
        scores = q @ k.transpose(-1, -2) * (d // self.heads) ** -0.5
        if not keep.all():  # data-dependent branch (user code)
            scores = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
        attn = scores.softmax(-1)
        self.head_peaks = attn.amax(dim=(0, 2, 3)).tolist()  # user bookkeeping
        return self.out((attn @ v).transpose(1, 2).reshape(b, n, d))


def rotary_inputs(device: str) -> tuple[torch.Tensor, torch.Tensor]:
    gen = inputs()
    x = torch.randn(2, 64, 64, generator=gen)
    keep = torch.ones(2, 64, dtype=torch.bool)
    keep[1, 48:] = False  # the second sequence is padded
    return x.to(device), keep.to(device)


def rotary_attention(device: str = "cpu", **_: Any) -> Workload:
    """rotary-embedding-torch: user module `RotaryAttention` (this file), one attention layer
    with `RotaryEmbedding` on 2 sequences of 64 tokens, one padded (inference).

    Breaks (user code, models.py `RotaryAttention.forward`): `if not keep.all():` a
    data-dependent branch; `.tolist()` of the per-head peaks kept in a Python list. The library
    (rotary_embedding_torch) traces whole.
    Fixes: knob `capture_scalar_outputs` (the `.tolist()`); code (mask unconditionally with
    `masked_fill`, keep the peaks as a tensor, `fixes.py:rotary_attention_tensor`), also
    under fullgraph; eager."""
    torch.manual_seed(0)
    model = RotaryAttention().to(device)
    frozen(model)
    return Workload(model, rotary_inputs(device), name="heldout.rotary_attention")


# --- ema-pytorch --------------------------------------------------------------------------------


def ema_parts(device: str) -> tuple[nn.Module, Any, torch.Tensor, torch.Tensor]:
    from ema_pytorch import EMA

    torch.manual_seed(0)
    net = mlp(32, 64, 64, 10).to(device).train()
    ema = EMA(net, beta=0.99, update_after_step=0, update_every=1)
    gen = inputs()
    x = torch.randn(32, 32, generator=gen).to(device)
    y = torch.randint(0, 10, (32,), generator=gen).to(device)
    return net, ema, x, y


def ema_step(net: nn.Module, ema: Any, optimizer: Any, update: Callable | None = None) -> Callable:
    update = update or ema.update

    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        optimizer.step()
        update()
        return loss.detach()

    return step


def ema_train(device: str = "cpu", **_: Any) -> Workload:
    """ema-pytorch: one AdamW step of a 3-layer MLP classifier followed by `EMA.update()` of
    its weight average (training, the whole step compiled).

    Breaks (library): ema_pytorch/ema_pytorch.py:283 `self.step.item()` in `update`, :274
    `epoch.item()` and :277 `.item()` in `get_current_decay` (3 breaks).
    Fixes: knob `capture_scalar_outputs`; disable (`ema.update` behind
    `torch.compiler.disable`); regional (only the classifier compiled, `compiled_module`);
    fused AdamW; eager."""
    net, ema, x, y = ema_parts(device)
    return Workload(ema_step(net, ema, adamw(net)), (x, y), name="heldout.ema_train")


# --- fast-pytorch-kmeans ------------------------------------------------------------------------


class ClusterHead(nn.Module):
    """User code: embed points with an MLP, then cluster the embeddings with a k-means that the
    user constructs and fits on every call (from fixed initial centroids)."""

    def __init__(self, clusters: int = 8) -> None:
        super().__init__()
        self.encoder = mlp(8, 32, 16)
        self.register_buffer("init_centroids", torch.randn(clusters, 16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from fast_pytorch_kmeans import KMeans

        feats = F.normalize(self.encoder(x), dim=-1)
        kmeans = KMeans(n_clusters=self.init_centroids.shape[0], max_iter=10, tol=-1.0)
        return kmeans.fit_predict(feats, centroids=self.init_centroids)


def kmeans_cluster(device: str = "cpu", **_: Any) -> Workload:
    """fast-pytorch-kmeans: user module `ClusterHead` (this file), an MLP encoder and a
    10-iteration `KMeans.fit_predict` over 512 embedded points (inference).

    Breaks (library): fast_pytorch_kmeans/kmeans.py:142 `time()` (an untraceable builtin) and
    :153 `time()` inside the iteration loop (Dynamo skips `fit_predict`'s frame and runs it
    eagerly); the `KMeans` object is constructed per call in user code.
    Fixes: disable (the k-means behind `torch.compiler.disable`); regional (only the encoder
    compiled); hoist (`KMeans` built once in `__init__`); eager."""
    torch.manual_seed(0)
    model = ClusterHead().to(device)
    frozen(model)
    x = torch.randn(512, 8, generator=inputs()).to(device)
    return Workload(model, (x,), name="heldout.kmeans_cluster")


# --- zuko ---------------------------------------------------------------------------------------


def zuko_parts(device: str) -> tuple[nn.Module, torch.Tensor]:
    import zuko

    torch.manual_seed(0)
    flow = zuko.flows.NSF(4, transforms=2, hidden_features=(32, 32)).to(device).train()
    gen = inputs()
    x = torch.randn(128, 4, generator=gen) * torch.tensor([1.0, 0.5, 2.0, 1.0])
    return flow, x.to(device)


def zuko_step(flow: nn.Module, optimizer: Any) -> Callable:
    def step(x: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss = -flow().log_prob(x).mean()
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step


def zuko_nsf_train(device: str = "cpu", **_: Any) -> Workload:
    """zuko: one AdamW step of a 2-transform neural spline flow (NSF) on 128 4-D samples by
    maximum likelihood (training, the whole step compiled).

    Breaks (library): zuko/transforms.py:71 `ComposedTransform.__init__` ("missing
    as_proxy()": a transform object built from traced tensors) reached from zuko/lazy.py:128,
    the lazy flow building its distribution on every call; after it, lazy.py:128 falls back
    to eager ("cell variable not populated").
    Fixes: regional (only the loss `-flow().log_prob(x).mean()` compiled, backward and
    optimizer eager); fused AdamW; eager."""
    flow, x = zuko_parts(device)
    return Workload(zuko_step(flow, adamw(flow)), (x,), name="heldout.zuko_nsf_train")


# --- the set ------------------------------------------------------------------------------------

# name: (pip distribution, "inference" or "training", factory), in the manifest's order
MODELS: dict[str, tuple[str, str, Callable[..., Workload]]] = {
    "geomloss_sinkhorn": ("geomloss", "inference", geomloss_sinkhorn),
    "geomloss_inline": ("geomloss", "inference", geomloss_inline),
    "pml_triplet_train": ("pytorch-metric-learning", "training", pml_triplet_train),
    "vq_train": ("vector-quantize-pytorch", "training", vq_train),
    "dct_compress": ("torch-dct", "inference", dct_compress),
    "msssim_ae_train": ("pytorch-msssim", "training", msssim_ae_train),
    "rotary_attention": ("rotary-embedding-torch", "inference", rotary_attention),
    "ema_train": ("ema-pytorch", "training", ema_train),
    "kmeans_cluster": ("fast-pytorch-kmeans", "inference", kmeans_cluster),
    "zuko_nsf_train": ("zuko", "training", zuko_nsf_train),
}


def build(device: str = "cpu", model: str = "geomloss_sinkhorn") -> Workload:
    """The advisor factory: held-out workload `model` on `device`, with its seeded inputs."""
    entry = MODELS.get(model)
    if entry is None:
        raise ValueError(f"unknown heldout model '{model}' (known: {', '.join(MODELS)})")
    return entry[2](device)

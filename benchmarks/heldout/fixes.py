"""Hand-written reference fixes of the held-out workloads (models.py): what a skilled engineer
would try for each break, one factory per fix, named `<workload>_<fix>`. Compiler knobs need no
factory (reference_ab's `@default+KEY=VALUE` on the workload itself); `variants.py` lists every
variant with its mode, knobs and the advisor action kind it stands for.

Every factory takes `device` and ignores other keyword arguments (reference_ab passes its
`--param`s to every variant). A fix builds the same seeded model and inputs as its workload, so
its outputs match the workload's eager outputs call for call (training steps included: the
same initial weights and inputs give the same losses, up to float rounding for fused AdamW).

Regional fixes that compile two pieces (vq_train, zuko_nsf_train) compile them here with
`torch.compile` and are measured `@eager` (the step around them runs uncompiled); a regional fix
of one module uses `Workload(compiled_module=...)` and is measured `@default`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

if importlib.util.find_spec("benchmarks") is None:  # loaded by its path from elsewhere
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import torch
import torch.nn.functional as F
from torch import nn

from advisor import Workload
from benchmarks.heldout import models as m

# --- geomloss_sinkhorn ---------------------------------------------------------------------------


def geomloss_sinkhorn_diameter(device: str = "cpu", **_: Any) -> Workload:
    """code: the clouds' diameter is known at setup, so pass it (`SamplesLoss(diameter=...)`):
    geomloss then skips `max_diameter` and its `.item()`. Computed once here with geomloss's
    own formula, so the epsilon schedule, and the output, are the workload's."""
    from geomloss import SamplesLoss
    from geomloss._legacy.sinkhorn_divergence import max_diameter

    torch.manual_seed(0)
    x, y = m.point_clouds(device)
    loss = SamplesLoss(**m.SINKHORN, diameter=max_diameter(x, y))
    return Workload(loss, (x, y), name="heldout.geomloss_sinkhorn.diameter")


# --- geomloss_inline -----------------------------------------------------------------------------


class OTAlignerHoisted(m.OTAligner):
    """hoist: `SamplesLoss` built once in `__init__` instead of in every forward."""

    def __init__(self) -> None:
        from geomloss import SamplesLoss

        super().__init__()
        self.ot = SamplesLoss(**m.SINKHORN)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.ot(self.proj(x), y)


def geomloss_inline_hoist(device: str = "cpu", **_: Any) -> Workload:
    torch.manual_seed(0)
    model = OTAlignerHoisted().to(device)
    m.frozen(model)
    return Workload(model, m.point_clouds(device), name="heldout.geomloss_inline.hoist")


# --- pml_triplet_train ---------------------------------------------------------------------------


def pml_triplet_train_regional(device: str = "cpu", **_: Any) -> Workload:
    """regional: only the embedder is compiled (in place); miner, loss, backward and AdamW run
    eagerly around it."""
    embedder, miner, loss_fn = m.pml_parts(device)
    step = m.pml_step(embedder, miner, loss_fn, m.adamw(embedder))
    return Workload(step, m.metric_batch(device), compiled_module=embedder)


def pml_triplet_train_disable(device: str = "cpu", **_: Any) -> Workload:
    """disable: the miner and the loss behind `torch.compiler.disable` (one eager call from the
    compiled step instead of a dozen broken graphs)."""
    embedder, miner, loss_fn = m.pml_parts(device)

    @torch.compiler.disable
    def metric_loss(emb: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return loss_fn(emb, labels, miner(emb, labels))

    optimizer = m.adamw(embedder)

    def step(x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss = metric_loss(embedder(x), labels)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return Workload(step, m.metric_batch(device))


def pml_triplet_train_fused(device: str = "cpu", **_: Any) -> Workload:
    """fused: AdamW(fused=True), the whole step compiled as in the workload."""
    embedder, miner, loss_fn = m.pml_parts(device)
    step = m.pml_step(embedder, miner, loss_fn, m.adamw(embedder, fused=True))
    return Workload(step, m.metric_batch(device))


# --- vq_train ------------------------------------------------------------------------------------


def vq_train_patch(device: str = "cpu", **_: Any) -> Workload:
    """patch (library): `init_embed_` returns at once once the codebook is initialised (it is,
    without k-means init); replaced on the instance by a no-op, which removes the tensor
    branch at vector_quantize_pytorch.py:462 from every forward."""
    model, x = m.vq_parts(device)
    codebook = model.vq._codebook
    assert bool(codebook.initted)
    codebook.init_embed_ = lambda data, mask=None: None
    return Workload(m.vq_step(model, m.adamw(model)), (x,))


def vq_train_disable(device: str = "cpu", **_: Any) -> Workload:
    """disable: the quantizer's forward behind `torch.compiler.disable`."""
    model, x = m.vq_parts(device)
    model.vq.forward = torch.compiler.disable(model.vq.forward)
    return Workload(m.vq_step(model, m.adamw(model)), (x,))


def vq_train_regional(device: str = "cpu", **_: Any) -> Workload:
    """regional (measure @eager): encoder and decoder compiled in place; the quantizer, the
    loss, backward and AdamW eager."""
    model, x = m.vq_parts(device)
    model.encoder.compile()
    model.decoder.compile()
    return Workload(m.vq_step(model, m.adamw(model)), (x,))


def vq_train_fused(device: str = "cpu", **_: Any) -> Workload:
    model, x = m.vq_parts(device)
    return Workload(m.vq_step(model, m.adamw(model, fused=True)), (x,))


# --- dct_compress --------------------------------------------------------------------------------


class DCTCompressorWhere(m.DCTCompressor):
    """code: every block's step chosen at once with `torch.where` (no Python branch, no loop)."""

    def forward(self, blocks: torch.Tensor) -> torch.Tensor:
        import torch_dct

        coeffs = torch_dct.dct_2d(blocks, norm="ortho")
        energy = coeffs.pow(2).sum(dim=(-2, -1), keepdim=True)
        fine = torch.round(coeffs / 0.5) * 0.5
        coarse = torch.round(coeffs / 2.0) * 2.0
        q = torch.where(
            energy > self.high,
            fine,
            torch.where(energy > self.low, coarse, torch.zeros_like(coeffs)),
        )
        return torch_dct.idct_2d(q, norm="ortho")


def dct_compress_where(device: str = "cpu", **_: Any) -> Workload:
    torch.manual_seed(0)
    model = DCTCompressorWhere().to(device)
    return Workload(model, (m.dct_blocks(device),))


# --- msssim_ae_train -----------------------------------------------------------------------------


def _msssim_step(model: nn.Module, optimizer: Any, history: list, hoist: bool, keep: bool) -> Any:
    from pytorch_msssim import SSIM

    built = SSIM(data_range=1.0, channel=3, win_size=7).to(next(model.parameters()).device)

    def step(images: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        recon = model(images)
        criterion = built if hoist else SSIM(data_range=1.0, channel=3, win_size=7)
        loss = 1.0 - criterion(recon, images)
        loss.backward()
        optimizer.step()
        history.append(loss.detach() if keep else loss.item())
        return loss.detach()

    return step


def msssim_ae_train_hoist(device: str = "cpu", **_: Any) -> Workload:
    """hoist: `SSIM` built once, outside the step."""
    model, images = m.msssim_parts(device)
    return Workload(_msssim_step(model, m.adamw(model), [], True, False), (images,))


def msssim_ae_train_tensor(device: str = "cpu", **_: Any) -> Workload:
    """code: the loss log keeps tensors (`loss.detach()`), no `.item()` in the step."""
    model, images = m.msssim_parts(device)
    return Workload(_msssim_step(model, m.adamw(model), [], False, True), (images,))


def msssim_ae_train_hoist_tensor(device: str = "cpu", **_: Any) -> Workload:
    """code: both, `SSIM` hoisted and tensors in the log."""
    model, images = m.msssim_parts(device)
    return Workload(_msssim_step(model, m.adamw(model), [], True, True), (images,))


def msssim_ae_train_regional(device: str = "cpu", **_: Any) -> Workload:
    """regional: only the autoencoder compiled (in place), the step as written around it."""
    model, images = m.msssim_parts(device)
    step = m.msssim_step(model, m.adamw(model), [])
    return Workload(step, (images,), compiled_module=model)


def msssim_ae_train_fused(device: str = "cpu", **_: Any) -> Workload:
    model, images = m.msssim_parts(device)
    return Workload(m.msssim_step(model, m.adamw(model, fused=True), []), (images,))


# --- rotary_attention ----------------------------------------------------------------------------


class RotaryAttentionTensor(m.RotaryAttention):
    """code: mask unconditionally (a no-op where nothing is masked) and keep the per-head peaks
    as a tensor instead of a Python list."""

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q = self.rotary.rotate_queries_or_keys(q)
        k = self.rotary.rotate_queries_or_keys(k)
        scores = q @ k.transpose(-1, -2) * (d // self.heads) ** -0.5
        scores = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
        attn = scores.softmax(-1)
        self.head_peaks_tensor = attn.amax(dim=(0, 2, 3))
        return self.out((attn @ v).transpose(1, 2).reshape(b, n, d))


def rotary_attention_tensor(device: str = "cpu", **_: Any) -> Workload:
    torch.manual_seed(0)
    model = RotaryAttentionTensor().to(device)
    m.frozen(model)
    return Workload(model, m.rotary_inputs(device))


# --- ema_train -----------------------------------------------------------------------------------


def ema_train_disable(device: str = "cpu", **_: Any) -> Workload:
    """disable: `ema.update` behind `torch.compiler.disable`."""
    net, ema, x, y = m.ema_parts(device)
    step = m.ema_step(net, ema, m.adamw(net), torch.compiler.disable(ema.update))
    return Workload(step, (x, y))


def ema_train_regional(device: str = "cpu", **_: Any) -> Workload:
    """regional: only the classifier compiled (in place); loss, AdamW and EMA eager."""
    net, ema, x, y = m.ema_parts(device)
    return Workload(m.ema_step(net, ema, m.adamw(net)), (x, y), compiled_module=net)


def ema_train_fused(device: str = "cpu", **_: Any) -> Workload:
    net, ema, x, y = m.ema_parts(device)
    return Workload(m.ema_step(net, ema, m.adamw(net, fused=True)), (x, y))


# --- kmeans_cluster ------------------------------------------------------------------------------


class ClusterHeadDisabled(m.ClusterHead):
    """disable: the k-means fit behind `torch.compiler.disable`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.cluster(F.normalize(self.encoder(x), dim=-1))

    @torch.compiler.disable
    def cluster(self, feats: torch.Tensor) -> torch.Tensor:
        from fast_pytorch_kmeans import KMeans

        kmeans = KMeans(n_clusters=self.init_centroids.shape[0], max_iter=10, tol=-1.0)
        return kmeans.fit_predict(feats, centroids=self.init_centroids)


class ClusterHeadHoisted(m.ClusterHead):
    """hoist: the `KMeans` object built once in `__init__` (fit_predict still runs per call)."""

    def __init__(self, clusters: int = 8) -> None:
        from fast_pytorch_kmeans import KMeans

        super().__init__(clusters)
        self.kmeans = KMeans(n_clusters=clusters, max_iter=10, tol=-1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        feats = F.normalize(self.encoder(x), dim=-1)
        return self.kmeans.fit_predict(feats, centroids=self.init_centroids)


def _cluster(device: str, cls: type[m.ClusterHead]) -> tuple[m.ClusterHead, torch.Tensor]:
    torch.manual_seed(0)
    model = cls().to(device)
    m.frozen(model)
    return model, torch.randn(512, 8, generator=m.inputs()).to(device)


def kmeans_cluster_disable(device: str = "cpu", **_: Any) -> Workload:
    model, x = _cluster(device, ClusterHeadDisabled)
    return Workload(model, (x,))


def kmeans_cluster_hoist(device: str = "cpu", **_: Any) -> Workload:
    model, x = _cluster(device, ClusterHeadHoisted)
    return Workload(model, (x,))


def kmeans_cluster_regional(device: str = "cpu", **_: Any) -> Workload:
    """regional: only the encoder compiled (in place); the k-means eager."""
    model, x = _cluster(device, m.ClusterHead)
    return Workload(model, (x,), compiled_module=model.encoder)


# --- zuko_nsf_train ------------------------------------------------------------------------------


def zuko_nsf_train_regional(device: str = "cpu", **_: Any) -> Workload:
    """regional (measure @eager): only the loss `-flow().log_prob(x).mean()` compiled; backward
    and AdamW eager around it."""
    flow, x = m.zuko_parts(device)
    optimizer = m.adamw(flow)
    nll = torch.compile(lambda x: -flow().log_prob(x).mean())

    def step(x: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss = nll(x)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return Workload(step, (x,))


def zuko_nsf_train_disable(device: str = "cpu", **_: Any) -> Workload:
    """disable: building the flow's distribution (`flow()`) behind `torch.compiler.disable`;
    its `log_prob` and the rest of the step compiled."""
    flow, x = m.zuko_parts(device)
    optimizer = m.adamw(flow)
    build = torch.compiler.disable(flow.__call__)

    def step(x: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss = -build().log_prob(x).mean()
        loss.backward()
        optimizer.step()
        return loss.detach()

    return Workload(step, (x,))


def zuko_nsf_train_fused(device: str = "cpu", **_: Any) -> Workload:
    flow, x = m.zuko_parts(device)
    return Workload(m.zuko_step(flow, m.adamw(flow, fused=True)), (x,))

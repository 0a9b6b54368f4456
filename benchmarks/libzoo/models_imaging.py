"""The library zoo's image models: medical imaging (monai), computer vision (kornia) and an
MLP-Mixer from einops layers. `models.py` lists them with the rest of the zoo."""

from __future__ import annotations

import functools

import torch
from torch import nn

from advisor import Workload
from benchmarks.libzoo.common import Built, Registry, frozen, image_batch, inputs

MODELS = Registry()

# --- monai: medical imaging ------------------------------------------------------------------


@MODELS.register("monai_unet", "monai", "segmentation", "2D residual UNet on 2x1x32x32 images")
def _monai_unet(device: str) -> Built:
    from monai.networks.nets import UNet

    net = UNet(
        spatial_dims=2,
        in_channels=1,
        out_channels=2,
        channels=(8, 16, 32),
        strides=(2, 2),
        num_res_units=1,
    ).to(device)
    frozen(net)
    images = torch.randn(2, 1, 32, 32, generator=inputs()).to(device)
    return Workload(net, (images,)), [net]


@MODELS.register("monai_swin_unetr", "monai", "segmentation", "2D SwinUNETR (windowed attention)")
def _monai_swin_unetr(device: str) -> Built:
    from monai.networks.nets import SwinUNETR

    net = SwinUNETR(
        in_channels=1,
        out_channels=2,
        spatial_dims=2,
        feature_size=12,
        depths=(1, 1, 1, 1),
        num_heads=(3, 3, 3, 3),
        window_size=4,
    ).to(device)
    frozen(net)
    images = torch.randn(1, 1, 64, 64, generator=inputs()).to(device)  # 2x2 at the bottom
    return Workload(net, (images,)), [net]


@MODELS.register(
    "monai_sliding_window",
    "monai",
    "segmentation",
    "sliding_window_inference of a small UNet over a 48x48 image in 24x24 windows",
)
def _monai_sliding_window(device: str) -> Built:
    from monai.inferers import sliding_window_inference
    from monai.networks.nets import UNet

    net = UNet(spatial_dims=2, in_channels=1, out_channels=2, channels=(8, 16), strides=(2,)).to(
        device
    )
    frozen(net)
    infer = functools.partial(
        sliding_window_inference, roi_size=(24, 24), sw_batch_size=4, predictor=net, overlap=0.25
    )
    image = torch.randn(1, 1, 48, 48, generator=inputs()).to(device)
    return Workload(infer, (image,)), [net]


# --- kornia: computer vision -----------------------------------------------------------------


@MODELS.register(
    "kornia_augment",
    "kornia",
    "augmentation",
    "AugmentationSequential (affine, color jiggle, flip p=0.5) replaying fixed parameters",
)
def _kornia_augment(device: str) -> Built:
    import kornia.augmentation as K

    augment = K.AugmentationSequential(
        K.RandomAffine(degrees=15.0, translate=(0.1, 0.1), p=1.0),
        K.ColorJiggle(0.2, 0.2, 0.2, 0.05, p=1.0),
        K.RandomHorizontalFlip(p=0.5),
    ).to(device)
    images = image_batch(device, batch=4)
    # Replaying sampled parameters makes the augmentation deterministic (its own API for it).
    params = augment.forward_parameters(images.shape)
    return Workload(functools.partial(augment, params=params), (images,)), [augment]


@MODELS.register(
    "kornia_canny",
    "kornia",
    "filters",
    "Canny edge detector with hysteresis (iterates until the edge map stops changing)",
)
def _kornia_canny(device: str) -> Built:
    import kornia.filters

    canny = kornia.filters.Canny(low_threshold=0.1, high_threshold=0.2, hysteresis=True)
    return Workload(canny.to(device), (image_batch(device),)), [canny]


@MODELS.register(
    "kornia_warp",
    "kornia",
    "geometry",
    "warp_perspective of images by random homographies",
)
def _kornia_warp(device: str) -> Built:
    from kornia.geometry.transform import warp_perspective

    generator = inputs(2)
    homography = torch.eye(3).repeat(2, 1, 1) + 0.05 * torch.randn(2, 3, 3, generator=generator)
    warp = functools.partial(warp_perspective, M=homography.to(device), dsize=(32, 32))
    return Workload(warp, (image_batch(device),)), []


# --- einops: layers --------------------------------------------------------------------------


@MODELS.register(
    "einops_mixer",
    "einops",
    "image classifier",
    "MLP-Mixer from einops Rearrange/Reduce layers and torch layers (2 blocks, 32x32 images)",
)
def _einops_mixer(device: str) -> Built:
    from einops.layers.torch import Rearrange, Reduce

    patch, dim, tokens = 8, 64, 16

    class Residual(nn.Sequential):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + super().forward(x)

    def block() -> list[nn.Module]:
        return [
            Residual(
                nn.LayerNorm(dim),
                Rearrange("b n c -> b c n"),
                nn.Linear(tokens, 2 * tokens),
                nn.GELU(),
                nn.Linear(2 * tokens, tokens),
                Rearrange("b c n -> b n c"),
            ),
            Residual(
                nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim)
            ),
        ]

    net = nn.Sequential(
        Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch, p2=patch),
        nn.Linear(patch * patch * 3, dim),
        *block(),
        *block(),
        nn.LayerNorm(dim),
        Reduce("b n c -> b c", "mean"),
        nn.Linear(dim, 10),
    ).to(device)
    frozen(net)
    return Workload(net, (image_batch(device),)), [net]

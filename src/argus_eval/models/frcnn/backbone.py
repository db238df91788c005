"""The ResNet of the detector: stem and res2..res4 (the backbone) and res5 (run per region).

Module and tensor names follow the published checkpoint: ``stem.conv1``, ``res2.0.conv1``, ...,
``shortcut``, each convolution with its batch norm under ``.norm`` (weight, bias, running_mean,
running_var; frozen: the detector is never trained here).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from argus_eval.models.frcnn.config import FrcnnConfig


class FrozenBatchNorm(nn.Module):
    """Batch norm with fixed statistics: y = (x - mean) / sqrt(var + eps) * weight + bias."""

    weight: torch.Tensor
    bias: torch.Tensor
    running_mean: torch.Tensor
    running_var: torch.Tensor

    def __init__(self, channels: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(channels))
        self.register_buffer("bias", torch.zeros(channels))
        self.register_buffer("running_mean", torch.zeros(channels))
        self.register_buffer("running_var", torch.ones(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = self.weight * torch.rsqrt(self.running_var + self.eps)
        shift = self.bias - self.running_mean * scale
        return x * scale.view(1, -1, 1, 1) + shift.view(1, -1, 1, 1)


class ConvNorm(nn.Conv2d):
    """A bias-free convolution followed by its frozen batch norm (``.norm``)."""

    def __init__(
        self, cin: int, cout: int, kernel: int, stride: int = 1, dilation: int = 1, groups: int = 1
    ) -> None:
        pad = dilation * (kernel - 1) // 2
        super().__init__(
            cin, cout, kernel, stride=stride, padding=pad, dilation=dilation, groups=groups, bias=False
        )
        self.norm = FrozenBatchNorm(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.norm(super().forward(x))
        return out


class Bottleneck(nn.Module):
    """1x1 -> 3x3 -> 1x1 with a projection shortcut when the width changes (MSRA: stride in the 1x1)."""

    def __init__(
        self, cin: int, cout: int, mid: int, stride: int, cfg: FrcnnConfig, dilation: int = 1
    ) -> None:
        super().__init__()
        self.shortcut = ConvNorm(cin, cout, 1, stride=stride) if cin != cout else None
        s1, s3 = (stride, 1) if cfg.stride_in_1x1 else (1, stride)
        self.conv1 = ConvNorm(cin, mid, 1, stride=s1)
        self.conv2 = ConvNorm(mid, mid, 3, stride=s3, dilation=dilation, groups=cfg.groups)
        self.conv3 = ConvNorm(mid, cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu_(self.conv1(x))
        out = F.relu_(self.conv2(out))
        out = self.conv3(out)
        out = out + (x if self.shortcut is None else self.shortcut(x))
        return F.relu_(out)


def stage(
    blocks: int, cin: int, cout: int, mid: int, stride: int, cfg: FrcnnConfig, dilation: int = 1
) -> nn.Sequential:
    """A ResNet stage: the first block strides (and widens), the rest keep the shape."""
    layers = [
        Bottleneck(cin if i == 0 else cout, cout, mid, stride if i == 0 else 1, cfg, dilation)
        for i in range(blocks)
    ]
    return nn.Sequential(*layers)


class Stem(nn.Module):
    """7x7 stride-2 convolution, ReLU, 3x3 stride-2 max pool (Caffe's: no padding, ceil mode)."""

    def __init__(self, cfg: FrcnnConfig) -> None:
        super().__init__()
        self.conv1 = ConvNorm(3, cfg.stem_channels, 7, stride=2)
        self.caffe_maxpool = cfg.caffe_maxpool

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu_(self.conv1(x))
        if self.caffe_maxpool:
            return F.max_pool2d(x, kernel_size=3, stride=2, padding=0, ceil_mode=True)
        return F.max_pool2d(x, kernel_size=3, stride=2, padding=1)


class ResNetC4(nn.Module):
    """Stem, res2, res3, res4: a (1, 3, H, W) image to its res4 map at stride 16."""

    def __init__(self, cfg: FrcnnConfig) -> None:
        super().__init__()
        self.stem = Stem(cfg)
        mid, out = cfg.groups * cfg.width_per_group, cfg.res2_channels
        cin = cfg.stem_channels
        for k, n in enumerate(cfg.stage_blocks):
            self.add_module(f"res{k + 2}", stage(n, cin, out, mid, 1 if k == 0 else 2, cfg))
            cin, out, mid = out, out * 2, mid * 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for name in ("res2", "res3", "res4"):
            x = getattr(self, name)(x)
        return x


def res5(cfg: FrcnnConfig) -> nn.Sequential:
    """res5 (3 blocks, 1024 -> 2048 channels for the published widths), run on each pooled region.

    With res5_halve False (the VG detector) it keeps stride 1 and dilates its 3x3 convolutions by 2."""
    mid = cfg.groups * cfg.width_per_group * 8
    out = cfg.feature_dim
    stride, dilation = (2, 1) if cfg.res5_halve else (1, 2)
    return stage(3, out // 2, out, mid, stride, cfg, dilation)

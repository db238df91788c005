"""An image as the detector reads it: BGR floats, shortest side resized, pixel means subtracted.

As LXMERT's feature extraction: the shortest side becomes min_size unless the longest would then pass
max_size (then the longest is max_size), sizes rounded half up, bilinear resampling of the float image
(align_corners False), (pixel - mean) / std per BGR channel. Any image is resized, small ones up; each
side is kept at least MIN_SIDE pixels so that the stride-16 backbone has a cell to work on (only an
image more than max_size / MIN_SIDE times longer than wide reaches that floor).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from argus_eval.data.images import ImageArray
from argus_eval.errors import ModelCallError
from argus_eval.models.frcnn.config import FrcnnConfig

MIN_SIDE = 32


@dataclass(frozen=True)
class Prepared:
    """The normalised (1, 3, h, w) tensor and the resized size (h, w) boxes are measured in."""

    pixels: torch.Tensor
    height: int
    width: int


def resized_size(height: int, width: int, min_size: int, max_size: int) -> tuple[int, int]:
    """(h, w) after the shortest-edge resize."""
    scale = min_size / min(height, width)
    if height < width:
        new_h, new_w = float(min_size), scale * width
    else:
        new_h, new_w = scale * height, float(min_size)
    if max(new_h, new_w) > max_size:
        shrink = max_size / max(new_h, new_w)
        new_h, new_w = new_h * shrink, new_w * shrink
    return max(int(new_h + 0.5), MIN_SIDE), max(int(new_w + 0.5), MIN_SIDE)


def prepare(image: ImageArray, cfg: FrcnnConfig, device: torch.device) -> Prepared:
    """The detector's input for one uint8 HxWx3 RGB image."""
    a = np.asarray(image)
    if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] != 3 or min(a.shape[:2]) < 1:
        raise ModelCallError(f"detector: expected a uint8 HxWx3 image, got dtype {a.dtype} shape {a.shape}")
    h, w = resized_size(a.shape[0], a.shape[1], cfg.min_size, cfg.max_size)
    bgr = torch.from_numpy(np.ascontiguousarray(a[:, :, ::-1])).to(device=device, dtype=torch.float32)
    x = bgr.permute(2, 0, 1)[None]
    if (h, w) != tuple(a.shape[:2]):
        x = F.interpolate(x, size=(h, w), mode="bilinear", align_corners=False)
    mean = torch.tensor(cfg.pixel_mean, dtype=torch.float32, device=device).view(1, 3, 1, 1)
    std = torch.tensor(cfg.pixel_std, dtype=torch.float32, device=device).view(1, 3, 1, 1)
    return Prepared((x - mean) / std, h, w)

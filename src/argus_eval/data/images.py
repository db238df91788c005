"""Image decoding into the one in-memory form every model and perturbation sees: uint8 HxWx3 RGB."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from PIL import Image, UnidentifiedImageError

from argus_eval.errors import SampleError

ImageArray = NDArray[np.uint8]


def load_image(path: Path, sample_id: str = "?") -> ImageArray:
    """Decode an image file to uint8 RGB; raise SampleError naming the sample and file on failure."""
    try:
        with Image.open(path) as im:
            im.load()
            return to_rgb_uint8(
                np.asarray(im) if im.mode in ("RGB", "L", "RGBA") else np.asarray(im.convert("RGB"))
            )
    except FileNotFoundError:
        raise SampleError(f"sample {sample_id}: image file {path} not found") from None
    except (UnidentifiedImageError, OSError, ValueError) as e:
        raise SampleError(f"sample {sample_id}: image {path} failed to decode ({e})") from None


def to_rgb_uint8(arr: np.ndarray) -> ImageArray:
    """Convert grayscale, RGBA and 16-bit arrays to uint8 RGB; reject what cannot be an image."""
    a = np.asarray(arr)
    if a.dtype == np.uint16:
        a = (a >> 8).astype(np.uint8)
    elif a.dtype == bool:
        a = a.astype(np.uint8) * 255
    elif np.issubdtype(a.dtype, np.floating):
        if not np.isfinite(a).all():
            raise SampleError("image contains NaN or inf")
        a = np.clip(a * (255.0 if a.max() <= 1.0 else 1.0), 0, 255).round().astype(np.uint8)
    elif a.dtype != np.uint8:
        a = np.clip(a, 0, 255).astype(np.uint8)
    if a.ndim == 2:
        a = np.stack([a] * 3, axis=-1)
    if a.ndim != 3:
        raise SampleError(f"image has {a.ndim} dimensions; expected HxW or HxWxC")
    if a.shape[2] == 4:
        rgb = a[..., :3].astype(np.float32)
        alpha = a[..., 3:4].astype(np.float32) / 255.0
        a = (rgb * alpha + 255.0 * (1 - alpha)).round().astype(np.uint8)  # composite on white
    elif a.shape[2] == 1:
        a = np.repeat(a, 3, axis=2)
    elif a.shape[2] != 3:
        raise SampleError(f"image has {a.shape[2]} channels; expected 1, 3 or 4")
    if a.shape[0] < 8 or a.shape[1] < 8:
        raise SampleError(f"image is {a.shape[1]}x{a.shape[0]} pixels; at least 8x8 is needed")
    return np.ascontiguousarray(a)

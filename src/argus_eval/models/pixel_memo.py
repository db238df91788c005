"""Pixels computed once per model: an image processor that resizes and normalises each distinct image once.

A run shows one image again and again to the same model: under each of its questions (five to ten a
studio image), under every task the model runs, and under the controls (a blank image is the same for
every sample of its size). The processor treats each image on its own (a batch's output is its images'
outputs, concatenated along the first axis, for every processor the adapters load: BLIP's and Gemma-3's
pixel stacks, Qwen2.5-VL's patch rows and grids), so a batch built from remembered images equals the
processor's own batch bit for bit (tests/test_pixel_memo.py checks it for every zoo processor).

Efficiency trials time the whole pipeline, so inside embed_memo.bypassed() every image is processed afresh.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
import torch

from argus_eval.models import embed_memo


class PixelMemo:
    """Wraps a transformers image processor; call it as the processor. Entries are bounded by bytes."""

    def __init__(self, inner: Any, max_bytes: int = 128 * 2**20) -> None:
        self._inner = inner
        self._max_bytes = max_bytes
        self._rows: OrderedDict[tuple[bytes, str], dict[str, torch.Tensor]] = OrderedDict()
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    @property
    def wrapped(self) -> Any:
        """The image processor itself (its class says which backend transformers chose)."""
        return self._inner

    def __getattr__(self, name: str) -> Any:  # everything else is the processor's
        return getattr(self._inner, name)

    def __call__(self, images: Any, **kwargs: Any) -> Any:
        nested = isinstance(images, list) and bool(images) and all(isinstance(i, list) for i in images)
        flat = [im for group in images for im in group] if nested else images
        if (
            embed_memo.is_bypassed()
            or kwargs.get("return_tensors") != "pt"
            or not isinstance(flat, list)
            or not flat
            or (nested and any(len(group) != 1 for group in images))
        ):
            return self._inner(images, **kwargs)
        settings = repr(sorted(kwargs.items()))
        parts = [self._one(im, settings, nested, kwargs) for im in flat]
        if parts[0] is None or any(p is None or p.keys() != parts[0].keys() for p in parts):
            return self._inner(images, **kwargs)  # an output this memo cannot join: the processor's own
        from transformers import BatchFeature

        return BatchFeature({k: torch.cat([p[k] for p in parts if p is not None]) for k in parts[0]})

    def _one(
        self, image: Any, settings: str, nested: bool, kwargs: dict[str, Any]
    ) -> dict[str, torch.Tensor] | None:
        key = (embed_memo.image_key(np.asarray(image)), settings)
        hit = self._rows.get(key)
        if hit is not None:
            self.hits += 1
            self._rows.move_to_end(key)
            return hit
        self.misses += 1
        out = self._inner([[image]] if nested else [image], **kwargs)
        if not all(isinstance(v, torch.Tensor) and v.ndim >= 1 for v in out.values()):
            return None
        row = {k: v for k, v in out.items()}
        self._rows[key] = row
        self._bytes += sum(v.numel() * v.element_size() for v in row.values())
        while self._bytes > self._max_bytes and len(self._rows) > 1:
            _, old = self._rows.popitem(last=False)
            self._bytes -= sum(v.numel() * v.element_size() for v in old.values())
        return row


def remember_pixels(processor: Any) -> None:
    """Give a transformers processor (with an image_processor) a PixelMemo in place of its own."""
    inner = getattr(processor, "image_processor", None)
    if inner is not None and not isinstance(inner, PixelMemo):
        processor.image_processor = PixelMemo(inner)

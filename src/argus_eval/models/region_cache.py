"""A region provider's output per image content, through a feature cache.

The key is the provider's fingerprint (its describe(): kind, settings, the detector's file digest)
and the image's content, so a changed setting or checkpoint never serves stale regions, and the same
pixels (one image under five questions, under a text perturbation, as a swap partner; a blank of one
size) are detected once. Each image is computed on its own, so a cached entry equals a fresh one.
Inside embed_memo.bypassed() (efficiency profiling) everything is computed afresh and nothing kept.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from argus_eval.data.images import ImageArray
from argus_eval.models.embed_memo import image_key, is_bypassed
from argus_eval.models.feature_cache import Arrays, FeatureCache, MemoryFeatureCache
from argus_eval.models.fingerprint import combine
from argus_eval.models.regions import RegionBatch, RegionFeatureProvider


class CachedRegions:
    """provider.regions(images), one computation per distinct (provider, image content)."""

    def __init__(self, provider: RegionFeatureProvider) -> None:
        self.provider = provider
        self.fingerprint = combine(provider.describe())
        self.cache: FeatureCache = MemoryFeatureCache()
        self._padded: set[str] = set()

    @property
    def padded(self) -> int:
        """Distinct images so far with fewer real regions than rows (padded; see RegionBatch.found)."""
        return len(self._padded)

    def regions(self, images: Sequence[ImageArray]) -> RegionBatch:
        """Regions of each image, from the cache where it holds them."""
        keys = [f"regions/{self.fingerprint}/{image_key(im).hex()}" for im in images]
        fresh = is_bypassed()
        entries: dict[str, Arrays] = {}
        missing: dict[str, ImageArray] = {}
        for key, im in zip(keys, images, strict=True):
            if key in entries or key in missing:
                continue
            hit = None if fresh else self.cache.get(key)
            if hit is None:
                missing[key] = im
            else:
                entries[key] = hit
        if missing:
            out = self.provider.regions(list(missing.values()))
            for i, key in enumerate(missing):
                entry: Arrays = {"features": out.features[i], "boxes": out.boxes[i]}
                if out.found is not None:
                    entry["found"] = np.asarray([out.found[i]], dtype=np.int32)  # (1,): stores keep it
                entries[key] = entry
                if not fresh:
                    self.cache.put(key, entry, durable=self.provider.costly)
        rows = [entries[k] for k in keys]
        found = None
        if all("found" in e for e in rows):
            found = np.array([int(e["found"][0]) for e in rows], dtype=np.int32)
            n_rows = rows[0]["features"].shape[0] if rows else 0
            self._padded.update(k for k, n in zip(keys, found, strict=True) if n < n_rows)
        return RegionBatch(
            np.ascontiguousarray(np.stack([e["features"] for e in rows]), dtype=np.float32),
            np.ascontiguousarray(np.stack([e["boxes"] for e in rows]), dtype=np.float32),
            found,
        )

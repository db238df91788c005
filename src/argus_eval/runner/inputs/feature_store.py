"""The run's feature cache: in memory, and in the run's store for entries worth keeping.

An entry a model marks durable (a detector's regions: seconds an image) is also written to the store,
while the store's features stay under BUDGET_BYTES (about 3,600 images of 36 x 2048 float32 regions);
beyond it entries stay in memory only. A later run on the same store reads them back instead of
computing them: the same bytes, so the same answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from numpy.typing import NDArray

from argus_eval.models.feature_cache import Arrays, MemoryFeatureCache
from argus_eval.runner.store import Store

BUDGET_BYTES = 1 << 30


class StoredFeatures:
    """A MemoryFeatureCache in front of the store's features table."""

    def __init__(self, store: Store, budget_bytes: int = BUDGET_BYTES) -> None:
        self._store = store
        self._memory = MemoryFeatureCache()
        self._budget = budget_bytes
        self._stored: int | None = None  # bytes in the store, read on first write

    def get(self, key: str) -> Arrays | None:
        hit = self._memory.get(key)
        if hit is None:
            hit = self._store.get_features(key)
            if hit is not None:
                self._memory.put(key, hit)
        return hit

    def put(self, key: str, arrays: Mapping[str, NDArray[Any]], durable: bool) -> None:
        self._memory.put(key, arrays)
        if not durable:
            return
        if self._stored is None:
            self._stored = self._store.feature_bytes()
        if self._stored < self._budget:
            self._stored += self._store.put_features(key, arrays)

"""Where a model keeps per-image arrays that are costly to compute (LXMERT's detector regions).

A cache maps a key (the provider's fingerprint and the image's content) to named arrays. A model that
reads one declares ``use_feature_cache``; the executor hands it the cache of its run (in memory,
backed by the run's store where cheap), so a region computed once serves every question on its
image, every condition that leaves the image unchanged, every checkpoint reading the same detector,
and a later run on the same store. Nothing here is module state: a model without a run's cache keeps
its own in-memory one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

Arrays = dict[str, NDArray[Any]]


class FeatureCache(Protocol):
    """key -> named arrays; ``durable`` asks that the entry outlive the run where that is cheap."""

    def get(self, key: str) -> Arrays | None: ...

    def put(self, key: str, arrays: Mapping[str, NDArray[Any]], durable: bool) -> None: ...


@runtime_checkable
class UsesFeatureCache(Protocol):
    """A model that reads a run's feature cache."""

    def use_feature_cache(self, cache: FeatureCache) -> None: ...


class MemoryFeatureCache:
    """An in-memory cache of at most limit_bytes; the oldest entries go first when it is full.

    An evicted entry is computed again the same way (per image, never per batch), so what is cached
    never changes a result, only how often it is computed."""

    def __init__(self, limit_bytes: int = 2 << 30) -> None:
        self._limit = limit_bytes
        self._entries: dict[str, Arrays] = {}
        self._bytes = 0

    def get(self, key: str) -> Arrays | None:
        return self._entries.get(key)

    def put(self, key: str, arrays: Mapping[str, NDArray[Any]], durable: bool = False) -> None:
        if key in self._entries:
            return
        entry = {k: np.asarray(v) for k, v in arrays.items()}
        self._entries[key] = entry
        self._bytes += sum(a.nbytes for a in entry.values())
        while self._bytes > self._limit and len(self._entries) > 1:
            oldest = next(iter(self._entries))
            self._bytes -= sum(a.nbytes for a in self._entries.pop(oldest).values())


def bind_feature_cache(model: object, cache: FeatureCache) -> None:
    """Give a model that reads per-image features the run's cache; any other model is left alone."""
    if isinstance(model, UsesFeatureCache):
        model.use_feature_cache(cache)

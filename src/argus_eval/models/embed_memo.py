"""Embeddings computed once per model: texts and images that recur across samples, conditions and cells.

A dual encoder meets the same inputs again and again: a reasoning substitute's statements under every
image condition, a gallery's texts under image-only perturbations, one image under five questions.
The memo keeps each input's vector, and computes missing ones in a canonical way (fixed shapes that do
not depend on which other inputs happen to be missing), so a vector never depends on the run's history:
a resumed run gets the same bits as a fresh one.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextvars import ContextVar
from typing import Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from argus_eval.data.images import ImageArray

T = TypeVar("T")

_BYPASS: ContextVar[bool] = ContextVar("argus_embed_memo_bypass", default=False)


@contextlib.contextmanager
def bypassed() -> Iterator[None]:
    """Inside: every lookup computes afresh and stores nothing. Efficiency profiling times the same
    inputs again and again; through the memo it would time dictionary lookups, not the model."""
    token = _BYPASS.set(True)
    try:
        yield
    finally:
        _BYPASS.reset(token)


def is_bypassed() -> bool:
    """Whether lookups are bypassed here (inside bypassed(): efficiency profiling)."""
    return _BYPASS.get()


def image_key(image: ImageArray) -> bytes:
    """Content key of an image: equal arrays share one entry even when they are different objects."""
    a = np.ascontiguousarray(image)
    h = hashlib.blake2b(a.tobytes(), digest_size=16)
    h.update(repr((a.shape, a.dtype.str)).encode())
    return h.digest()


class EmbeddingMemo(Generic[T]):
    """key -> vector for one model; compute(items) embeds a list of items (in canonical chunks)."""

    def __init__(self, compute: Callable[[list[T]], NDArray[np.float32]], limit: int = 200_000) -> None:
        self._compute = compute
        self._limit = limit
        self._rows: dict[Hashable, NDArray[np.float32]] = {}
        self.hits = 0
        self.misses = 0

    def lookup(self, keys: Sequence[Hashable], items: Sequence[T]) -> NDArray[np.float32]:
        """(n, d) vectors of items (keys identify them), computing only the ones never seen."""
        if _BYPASS.get():
            return self._fresh(keys, items)
        missing: dict[Hashable, T] = {}
        for k, item in zip(keys, items, strict=True):
            if k not in self._rows and k not in missing:
                missing[k] = item
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        if missing:
            vecs = self._compute(list(missing.values()))
            if len(self._rows) + len(missing) > self._limit:
                self._rows.clear()
            self._rows.update(zip(missing, vecs, strict=True))
            fresh = dict(zip(missing, vecs, strict=True))
        else:
            fresh = {}
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        rows = [fresh[k] if k in fresh else self._rows[k] for k in keys]
        out: NDArray[np.float32] = np.ascontiguousarray(np.stack(rows), dtype=np.float32)
        return out

    def _fresh(self, keys: Sequence[Hashable], items: Sequence[T]) -> NDArray[np.float32]:
        """Compute every distinct item now (as a first lookup would), store nothing."""
        distinct = dict(zip(keys, items, strict=True))
        if not distinct:
            return np.zeros((0, 0), dtype=np.float32)
        vecs = dict(zip(distinct, self._compute(list(distinct.values())), strict=True))
        out: NDArray[np.float32] = np.ascontiguousarray(np.stack([vecs[k] for k in keys]), dtype=np.float32)
        return out


def fixed_chunks(n: int, size: int) -> list[list[int]]:
    """Positions of n items in chunks of exactly size rows, the last one filled by repeating its last
    item: every forward then has the same batch shape, so an item's vector never depends on its
    neighbours (the filler rows' outputs are dropped). Inside bypassed() (efficiency profiling, which
    stores nothing) the last chunk is not filled: a timed batch of one must cost one row, not `size`."""
    out: list[list[int]] = []
    fill = not _BYPASS.get()
    for start in range(0, n, size):
        part = list(range(start, min(n, start + size)))
        out.append(part + [part[-1]] * (size - len(part)) if fill else part)
    return out

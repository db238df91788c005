"""The n-gram tables' sort order equals numpy's stable argsort (ties keep position order)."""

from __future__ import annotations

import numpy as np

from argus_eval.metrics._ngrams import _stable_order


def test_stable_order_equals_stable_argsort() -> None:
    rng = np.random.default_rng(0)
    for size, high in ((0, 1), (1, 1), (1000, 7), (50_000, 10**6)):
        key = rng.integers(0, high, size, dtype=np.int64)
        np.testing.assert_array_equal(_stable_order(key), np.argsort(key, kind="stable"))
    big = np.array([2**62, 5, 2**62, 5], dtype=np.int64)  # too large for the composite: falls back
    np.testing.assert_array_equal(_stable_order(big), np.argsort(big, kind="stable"))

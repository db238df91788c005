"""Builders of CellData for the common metric shapes (per-sample means and ratios of sums)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from argus_eval.scoring.types import CellData, CellKey, FloatArray


def ratio_of_sums(sums: FloatArray) -> FloatArray:
    """(R, 2) column sums [numerator, denominator] -> (R,) numerator / denominator (0 where the
    denominator is 0). The mean of per-sample scores is the case denominator = 1 per sample."""
    num, den = sums[:, 0], sums[:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / den, 0.0)


def mean_cell(
    key: CellKey,
    sample_ids: Sequence[str],
    scores: Sequence[float] | FloatArray,
    predictions: Sequence[str] | None = None,
) -> CellData:
    """A cell whose primary score is the mean of per-sample scores in [0, 1] (components [score, 1])."""
    s = np.asarray(scores, dtype=np.float64)
    comps = np.column_stack([s, np.ones_like(s)])
    preds = None if predictions is None else list(predictions)
    return CellData(key, list(sample_ids), comps, ratio_of_sums, preds)


def ratio_cell(
    key: CellKey,
    sample_ids: Sequence[str],
    numerators: Sequence[float] | FloatArray,
    denominators: Sequence[float] | FloatArray,
    predictions: Sequence[str] | None = None,
) -> CellData:
    """A corpus-style cell: score = sum(numerators) / sum(denominators) over the (re)sample."""
    comps = np.column_stack([np.asarray(numerators, np.float64), np.asarray(denominators, np.float64)])
    preds = None if predictions is None else list(predictions)
    return CellData(key, list(sample_ids), comps, ratio_of_sums, preds)

"""Percentile intervals and pairwise rank shares from bootstrap rows (row 0 = full sample)."""

from __future__ import annotations

import numpy as np

from argus_eval.scoring.types import FloatArray


def percentile_interval(rows: FloatArray | None, confidence: float) -> tuple[float, float] | None:
    """Percentile interval of the resample rows (1..), ignoring NaN rows; None without any resample."""
    if rows is None:
        return None
    r = rows[1:]
    r = r[~np.isnan(r)]
    if r.size == 0:
        return None
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.percentile(r, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    return (float(lo), float(hi))

"""Percentile intervals and pairwise rank shares from bootstrap rows (row 0 = full sample)."""

from __future__ import annotations

from collections.abc import Mapping

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


def pairwise_shares(rows: Mapping[str, FloatArray | None]) -> dict[str, dict[str, float | None]]:
    """For each ordered pair (A, B), the share of resamples in which A scores strictly above B, over the
    resamples where both are defined; None when A or B is undefined."""
    names = sorted(rows)
    out: dict[str, dict[str, float | None]] = {}
    for a in names:
        out[a] = {}
        for b in names:
            ra, rb = rows[a], rows[b]
            if a == b:
                continue
            if ra is None or rb is None:
                out[a][b] = None
                continue
            both = ~np.isnan(ra[1:]) & ~np.isnan(rb[1:])
            out[a][b] = float(np.mean(ra[1:][both] > rb[1:][both])) if both.any() else None
    return out

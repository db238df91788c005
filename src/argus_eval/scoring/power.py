"""How many samples per cell would separate a tied pair: a power estimate from the paired resamples.

A tie is a pair whose P(A beats B) stays below the claim level. Resampling n samples spreads each cell's
score around its full-sample value by about 1/sqrt(n); with k x n samples the spread would shrink by
sqrt(k). So the pair's resample rows are shrunk towards their full-sample values by 1/sqrt(k) and the
head-to-head recomputed: the smallest k at which P(beats) reaches the claim level, times the pair's mean
samples per shared cell, is the estimate. It takes the observed gap for the true one, so it is what a
rerun at that size would claim about half the time (the 50 % point of the power curve), and it is as
uncertain as the gap: a tie with P(beats) near 0.5 has barely measured its gap. Timing trials are not
samples: efficiency rows are left as they are, so a tie only more timing trials could break gets none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from argus_eval.scoring.types import FloatArray

MAX_FACTOR = 10_000.0  # beyond 10,000x the samples per cell, no estimate is given
_BISECT_STEPS = 12


def shrink(rows: FloatArray, s: float) -> FloatArray:
    """Resample rows (row 0 the full sample) pulled towards row 0 by the factor s in (0, 1]."""
    out: FloatArray = rows[:1] + (rows - rows[:1]) * s
    return out


def separating_factor(p_at: Callable[[float], float | None], confidence: float) -> float | None:
    """The smallest factor k >= 1 of the samples at which p_at(k) (the leading model's P(beats)) reaches
    confidence: doubling to bracket it, then bisection on log k. None when even MAX_FACTOR does not."""

    def reached(k: float) -> bool:
        p = p_at(k)
        return p is not None and p >= confidence

    hi = 1.0
    while not reached(hi):
        if hi >= MAX_FACTOR:
            return None
        hi = min(MAX_FACTOR, hi * 2)
    lo = hi / 2
    if hi == 1.0:
        return 1.0
    for _ in range(_BISECT_STEPS):
        mid = math.sqrt(lo * hi)
        if reached(mid):
            hi = mid
        else:
            lo = mid
    return hi


def samples_per_cell(factor: float | None, sizes: Mapping[object, int]) -> int | None:
    """The estimate as samples per shared cell: the factor times the pair's mean shared cell size."""
    if factor is None or not sizes:
        return None
    mean = sum(sizes.values()) / len(sizes)
    return math.ceil(factor * mean)

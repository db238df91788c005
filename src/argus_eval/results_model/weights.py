"""How the ARGUS weights are normalised: the scorecard (which records the weights it used) and the advisor
(which re-weights a run's axes) share one rule, so both give the same numbers for the same weights."""

from __future__ import annotations

import math
from collections.abc import Mapping


def normalised(weights: Mapping[str, float]) -> dict[str, float]:
    """weights / their sum, without overflow: each is divided by the largest first, so 1e308 four times
    gives 0.25 each, exactly as 1 four times does (summing 1e308s first would give inf, then NaN or 0).
    ValueError when no weight is positive or one is not finite (the option models refuse both first)."""
    top = max(weights.values(), default=0.0)
    if not top > 0 or not all(math.isfinite(w) and w >= 0 for w in weights.values()):
        raise ValueError(f"weights must be finite, >= 0 and not all 0, got {dict(weights)}")
    scaled = {k: w / top for k, w in weights.items()}
    total = math.fsum(scaled.values())
    return {k: w / total for k, w in scaled.items()}

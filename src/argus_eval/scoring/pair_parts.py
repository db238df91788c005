"""What the head-to-head compares two models on, per axis: the parts both models have, each a win (1),
tie (0.5) or loss (0) per row. An axis's spec (scoring/axis_registry.py) names its parts function, so
the head-to-head compares every declared axis that has one without knowing it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from argus_eval.scoring.axes import CDC_VARIANTS
from argus_eval.scoring.types import FloatArray


@dataclass(frozen=True)
class PairInputs:
    """Per-model parts the head-to-head reads: name -> rows (row 0 full sample, then resamples)."""

    clean: dict[str, dict[tuple[str, str], FloatArray]]  # model -> (task, dataset) -> score rows
    floor: dict[str, set[tuple[str, str]]]  # model -> clean cells at or below chance
    retention: dict[str, dict[tuple[str, str, str], FloatArray]]  # model -> (task, dataset, cond) -> ratio
    efficiency: dict[str, dict[str, FloatArray]]  # model -> task -> E_task rows


Parts = dict[tuple[str, ...], FloatArray]  # part key (task first) -> win rows
# (inputs of the pair, model A, model B, CDC variant) -> A's wins over B per shared part
PairParts = Callable[[PairInputs, str, str, str], Parts]


def wins(a: FloatArray, b: FloatArray) -> FloatArray:
    """1 where a > b, 0.5 on a tie, 0 where a < b; NaN where either is NaN."""
    w = np.where(a > b, 1.0, np.where(a < b, 0.0, 0.5))
    return np.where(np.isnan(a) | np.isnan(b), np.nan, w)


def shared_clean(inp: PairInputs, a: str, b: str) -> list[tuple[str, str]]:
    """The clean (task, dataset) cells both models ran."""
    return sorted(set(inp.clean.get(a, {})) & set(inp.clean.get(b, {})))


def capability_parts(inp: PairInputs, a: str, b: str, _variant: str) -> Parts:
    """Per shared clean cell, the clean scores compared."""
    return {k: wins(inp.clean[a][k], inp.clean[b][k]) for k in shared_clean(inp, a, b)}


def cdc_parts(inp: PairInputs, a: str, b: str, variant: str) -> Parts:
    """Per task, CDC of both models over the datasets both ran above chance, compared."""
    formula = CDC_VARIANTS[variant][1]
    skip = inp.floor.get(a, set()) | inp.floor.get(b, set())
    shared = sorted(set(shared_clean(inp, a, b)) - skip)
    out: Parts = {}
    for task in sorted({t for t, _ in shared}):
        ds = [d for t, d in shared if t == task]
        if len(ds) < 2:
            continue
        va = np.clip(formula(np.stack([inp.clean[a][(task, d)] for d in ds], axis=1)), 0.0, 1.0)
        vb = np.clip(formula(np.stack([inp.clean[b][(task, d)] for d in ds], axis=1)), 0.0, 1.0)
        if np.isnan(va[0]) or np.isnan(vb[0]):
            continue
        out[(task,)] = wins(va, vb)
    return out


def retention_parts(inp: PairInputs, a: str, b: str, _variant: str) -> Parts:
    """Per perturbed cell both ran (retention defined for both), the retention ratios compared."""
    theirs = inp.retention.get(b, {})
    return {
        k: wins(ra, theirs[k])
        for k, ra in sorted(inp.retention.get(a, {}).items())
        if k in theirs and not np.isnan(ra[0]) and not np.isnan(theirs[k][0])
    }


def efficiency_parts(inp: PairInputs, a: str, b: str, _variant: str) -> Parts:
    """Per task both were timed on, E_task compared."""
    theirs = inp.efficiency.get(b, {})
    return {(t,): wins(ea, theirs[t]) for t, ea in sorted(inp.efficiency.get(a, {}).items()) if t in theirs}

"""What the head-to-head compares two models on, per axis: the parts both models have, each a win (1),
tie (0.5) or loss (0) per row. An axis's spec (scoring/axis_registry.py) names its parts function, so
the head-to-head compares every declared axis that has one without knowing it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from argus_eval.scoring.axes import CDC_VARIANTS
from argus_eval.scoring.types import FloatArray
from argus_eval.scoring.view import ScorecardView


@dataclass(frozen=True)
class PairInputs:
    """The views (scoring/view.py) a pair is compared on, model -> view: each model's cells on the samples
    both scored. The properties are the per-model rows the built-in parts read (row 0 full sample)."""

    views: Mapping[str, ScorecardView]

    @cached_property
    def clean(self) -> dict[str, dict[tuple[str, str], FloatArray]]:
        """model -> (task, dataset) -> clean score rows."""
        return {m: v.clean for m, v in self.views.items() if v.clean}

    @cached_property
    def floor(self) -> dict[str, set[tuple[str, str]]]:
        """model -> clean cells at or below chance (decided on the model's own samples)."""
        return {m: {k.group for k in v.floor} for m, v in self.views.items() if v.floor}

    @cached_property
    def retention(self) -> dict[str, dict[tuple[str, str, str], FloatArray]]:
        """model -> (task, dataset, condition) -> retention ratio rows."""
        return {
            m: {(k.task, k.dataset, k.condition): r.values for k, r in v.retention.items()}
            for m, v in self.views.items()
        }

    @cached_property
    def efficiency(self) -> dict[str, dict[str, FloatArray]]:
        """model -> task -> E_task rows."""
        return {m: {t: r.values for t, r in v.efficiency_tasks.items()} for m, v in self.views.items()}

    def scaled(self, s: float, models: Sequence[str]) -> PairInputs:
        """These models' views with 1/s**2 times the samples per cell (scoring/power.py)."""
        return PairInputs({m: self.views[m].scaled(s) for m in models if m in self.views})


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

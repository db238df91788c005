"""Whether a pair's comparison rests on complete cells (docs/comparisons.md, "Failures").

"A above B" needs both models to have scored at least `scoring.claim_min_scored` (95 % by default) of
the samples of every cell they share; otherwise the pair is *incomplete* on that axis and no claim is
made either way, with the short cells and their counts named. Capability looks at the shared clean
cells, overall also at the shared perturbed cells (controls measure image reliance and enter neither).
A model that could not load has no cell at all: every pair with it is incomplete, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from argus_eval.scoring.gates import Gate
from argus_eval.scoring.types import CellKey

Shortfalls = dict[str, dict[tuple[str, str], dict[str, Any]]]
"""axis ("capability", "overall") -> (A, B) in name order -> {"reason": ..., "cells": [...]}."""


def _clean(key: CellKey) -> bool:
    return key.is_clean


def _not_control(key: CellKey) -> bool:
    return not key.is_control


_AXIS_CELLS: dict[str, Callable[[CellKey], bool]] = {"capability": _clean, "overall": _not_control}


@dataclass(frozen=True)
class Coverage:
    """What each planned cell asked and scored, and the models that have no cell (why)."""

    planned: Mapping[CellKey, int]  # samples a cell asked, every planned cell (none scored: still here)
    scored: Mapping[CellKey, int]  # samples a cell scored (absent: none)
    unavailable: Mapping[str, str] = field(default_factory=dict)  # model -> why it ran nothing

    def models(self) -> set[str]:
        return {k.model for k in self.planned} | set(self.unavailable)


def _short(cov: Coverage, key: CellKey, share: float) -> dict[str, Any] | None:
    asked, got = cov.planned[key], cov.scored.get(key, 0)
    if asked == 0 or got >= share * asked - 1e-9:
        return None
    return {"key": key, "scored": got, "samples": asked}


def _reason(cells: Sequence[dict[str, Any]], share: float) -> str:
    first = cells[0]
    key: CellKey = first["key"]
    where = f"{key.task}/{key.dataset}" + ("" if key.is_clean else f" ({key.condition})")
    more = f" and {len(cells) - 1} more cell(s)" if len(cells) > 1 else ""
    return (
        f"{key.model} scored {first['scored']} of {first['samples']} samples on {where}{more}; "
        f"a claim needs {share:.0%} of every shared cell from both"
    )


def pair_shortfall(cov: Coverage, a: str, b: str, share: float) -> dict[str, dict[str, Any]]:
    """axis -> why the pair (a, b) is incomplete on it (absent: complete)."""
    out: dict[str, dict[str, Any]] = {}
    gone = [m for m in (a, b) if m in cov.unavailable]
    if gone:
        reason = "; ".join(f"{m} ran no cell: {cov.unavailable[m]}" for m in gone)
        return {axis: {"reason": reason, "cells": []} for axis in _AXIS_CELLS}
    shared = sorted(k for k in cov.planned if k.model == a and k.of_model(b) in cov.planned)
    for axis, wanted in _AXIS_CELLS.items():
        cells = [
            s
            for k in shared
            if wanted(k)
            for m in (a, b)
            if (s := _short(cov, k.of_model(m), share)) is not None
        ]
        if cells:
            out[axis] = {"reason": _reason(cells, share), "cells": cells}
    return out


def shortfalls(cov: Coverage, share: float) -> Shortfalls:
    """Every incomplete pair per axis (pairs in name order)."""
    names = sorted(cov.models())
    out: Shortfalls = {axis: {} for axis in _AXIS_CELLS}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            for axis, entry in pair_shortfall(cov, a, b, share).items():
                out[axis][(a, b)] = entry
    return out


def incomplete_gate(cov: Coverage, share: float) -> Gate:
    """The head-to-head gate of the incomplete pairs (listed in comparison.incomplete)."""
    return Gate(
        shortfalls(cov, share), "Incomplete (a model did not score its shared cells; no claim): {pairs}."
    )

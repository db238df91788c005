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

from argus_eval.scoring.reliance import is_control
from argus_eval.scoring.types import CellKey

Shortfalls = dict[str, dict[tuple[str, str], dict[str, Any]]]
"""axis ("capability", "overall") -> (A, B) in name order -> {"reason": ..., "cells": [...]}."""


def _clean(key: CellKey) -> bool:
    return key.is_clean


def _not_control(key: CellKey) -> bool:
    return not is_control(key.condition)


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
    return {"model": key.model, "task": key.task, "dataset": key.dataset, "condition": key.condition,
            "scored": got, "samples": asked}  # fmt: skip


def _reason(cells: Sequence[dict[str, Any]], share: float) -> str:
    first = cells[0]
    where = f"{first['task']}/{first['dataset']}" + (
        "" if first["condition"] == "clean" else f" ({first['condition']})"
    )
    more = f" and {len(cells) - 1} more cell(s)" if len(cells) > 1 else ""
    return (
        f"{first['model']} scored {first['scored']} of {first['samples']} samples on {where}{more}; "
        f"a claim needs {share:.0%} of every shared cell from both"
    )


def pair_shortfall(cov: Coverage, a: str, b: str, share: float) -> dict[str, dict[str, Any]]:
    """axis -> why the pair (a, b) is incomplete on it (absent: complete)."""
    out: dict[str, dict[str, Any]] = {}
    gone = [m for m in (a, b) if m in cov.unavailable]
    if gone:
        reason = "; ".join(f"{m} ran no cell: {cov.unavailable[m]}" for m in gone)
        return {axis: {"reason": reason, "cells": []} for axis in _AXIS_CELLS}
    mine = {(k.task, k.dataset, k.condition) for k in cov.planned if k.model == a}
    shared = sorted(w for w in mine if CellKey(b, *w) in cov.planned)  # (task, dataset, condition)
    for axis, wanted in _AXIS_CELLS.items():
        cells = [
            s
            for w in shared
            if wanted(CellKey(a, *w))
            for m in (a, b)
            if (s := _short(cov, CellKey(m, *w), share)) is not None
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

"""Gates of the head-to-head comparison: pairs about which no claim is made, and why.

A gate names, per axis, the pairs whose claims it withholds. The pair's h and P(A beats B) are still
computed and shown, but head_to_head reads every gate the same way: a held pair is neither claimed
above or below nor tied, counts in no rank, keeps both models from leading, and is listed under its
gate's name (results.json's comparison.<name>), with the gate's phrase in the gap sentence. The run's
gates: "incomplete" (scoring/completeness.py: a model did not score enough of a shared cell) and
"withheld" (scoring/format_gate.py: a shared clean cell's answers mostly lack the asked-for form).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

INCOMPLETE = "incomplete"
WITHHELD = "withheld"

HeldPairs = Mapping[str, Mapping[tuple[str, str], Mapping[str, Any]]]
"""axis -> (A, B) in name order -> why no claim is made about the pair (its "reason", and what else the
gate lists, e.g. the short "cells")."""


@dataclass(frozen=True)
class Gate:
    """One gate: the pairs it holds, and the gap sentence's phrase for them ("{pairs}" stands for them)."""

    pairs: HeldPairs
    says: str

    def held(self) -> list[tuple[str, str]]:
        """Every pair held on some axis, in name order."""
        return sorted({p for by_pair in self.pairs.values() for p in by_pair})

    def tail(self) -> str:
        """The gap sentence's mention of the held pairs ("" when none)."""
        held = self.held()
        return "" if not held else " " + self.says.format(pairs="; ".join(" and ".join(p) for p in held))


Gates = Mapping[str, Gate]
"""gate name -> gate, in the order the gap sentence names them."""


def holds(gates: Gates, axis: str, x: str, y: str) -> bool:
    """Whether some gate withholds the claims about x and y (either order) on an axis."""
    key = (x, y) if x < y else (y, x)
    return any(key in g.pairs.get(axis, {}) for g in gates.values())

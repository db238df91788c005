"""The answer-format gate of the head-to-head comparison: a cell whose answers mostly lack the form its
questions ask for makes no claim.

A generative cell reports its answer-format rate (tasks/answers.py: the share of answers that parse to the
question's answer type, or of non-empty captions). When a clean cell's rate is below
``scoring.min_format_rate``, the cell measures the model's output format rather than what the task asks,
and so does every figure made from it (its P part, the CDC over its datasets, the retention whose
denominator it is): no "A above B" of a pair that shares the cell is stated, on any axis, and the pair's
entry (comparison.withheld) gives the cell, its rate and the threshold as the reason. Perturbed cells are
not gated: a question read wrongly under a perturbation (a typo'd "what colour" answered as a yes/no) is
what robustness measures (the zoo's chat VLMs answered 30 to 53 % of ShapesWorld questions in type under
typos at severity 5).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from argus_eval.scoring.gates import Gate
from argus_eval.scoring.headtohead import AXIS_NAMES
from argus_eval.scoring.pair_parts import PairInputs
from argus_eval.scoring.types import CellKey

# (task, dataset) of one model's clean cell
Part = tuple[str, str]


@dataclass(frozen=True)
class FormatGate:
    """The threshold and, per model, its clean cells below it: model -> (task, dataset) -> rate."""

    threshold: float = 0.0
    low: Mapping[str, Mapping[Part, float]] = field(default_factory=dict)

    def withheld(self, a: str, b: str, parts: Iterable[Part]) -> str | None:
        """Why the claims between a and b are withheld (the first low cell among the clean cells they
        share), or None when none is below the threshold."""
        for part in sorted(set(parts)):
            for model in (a, b):
                rate = self.low.get(model, {}).get(part)
                if rate is not None:
                    task, dataset = part
                    return (
                        f"{model} {task}/{dataset}: answer-format rate {rate:.3f} below "
                        f"{self.threshold:g} (scoring.min_format_rate), so the cell makes no claim"
                    )
        return None

    def gate(self, models: Sequence[str], inputs: Callable[[str, str], PairInputs]) -> Gate:
        """The head-to-head gate: every pair that shares a low clean cell (a part of their comparison:
        both have rows for it in the pair's inputs) is held on every axis."""
        names = sorted(models)
        held: dict[tuple[str, str], dict[str, Any]] = {}
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                if a not in self.low and b not in self.low:
                    continue
                inp = inputs(a, b)
                why = self.withheld(a, b, set(inp.clean.get(a, {})) & set(inp.clean.get(b, {})))
                if why is not None:
                    held[(a, b)] = {"reason": why}
        return Gate(
            {axis: held for axis in AXIS_NAMES},
            "No claim about {pairs} (a cell's answers mostly lack the asked-for form).",
        )


def format_gate(rates: Mapping[CellKey, float | None], threshold: float) -> FormatGate:
    """The gate over the clean cells' answer-format rates (None: not a generative cell, never gated)."""
    low: dict[str, dict[Part, float]] = {}
    for key, rate in sorted(rates.items()):
        if key.is_clean and rate is not None and rate < threshold:
            low.setdefault(key.model, {})[key.group] = rate
    return FormatGate(threshold, low)

"""The answer-format gate of the head-to-head comparison: a cell whose answers mostly lack the form its
questions ask for makes no claim.

A generative cell reports its answer-format rate (tasks/answers.py: the share of answers that parse to the
question's answer type, or of non-empty captions). When it is below ``scoring.min_format_rate``, the cell
measures the model's output format rather than what the task asks, so no "A above B" that reads the cell
is stated: every claim of a pair whose comparison uses the cell (a shared clean cell, or a perturbed cell
of the retention both have) is withheld, with the cell, its rate and the threshold as the reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from argus_eval.scoring.types import CellKey

# (task, dataset, condition) of one model's cell
Part = tuple[str, str, str]


@dataclass(frozen=True)
class FormatGate:
    """The threshold and, per model, its cells below it: model -> (task, dataset, condition) -> rate."""

    threshold: float = 0.0
    low: Mapping[str, Mapping[Part, float]] = field(default_factory=dict)

    def withheld(self, a: str, b: str, parts: Iterable[Part]) -> str | None:
        """Why the claims between a and b are withheld (the first low cell their comparison reads), or
        None when every cell it reads is at or above the threshold."""
        for part in sorted(set(parts)):
            for model in (a, b):
                rate = self.low.get(model, {}).get(part)
                if rate is not None:
                    task, dataset, condition = part
                    return (
                        f"{model} {task}/{dataset}/{condition}: answer-format rate {rate:.3f} below "
                        f"{self.threshold:g} (scoring.min_format_rate), so the cell makes no claim"
                    )
        return None


def format_gate(rates: Mapping[CellKey, float | None], threshold: float) -> FormatGate:
    """The gate over the cells' answer-format rates (None: not a generative cell, never gated)."""
    low: dict[str, dict[Part, float]] = {}
    for key, rate in sorted(rates.items()):
        if rate is not None and rate < threshold:
            low.setdefault(key.model, {})[(key.task, key.dataset, key.condition)] = rate
    return FormatGate(threshold, low)

"""Input cells (the contract with tasks/runner) and the axis value types of the scorecard."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

CLEAN = "clean"

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, order=True)
class CellKey:
    """One (model, task, dataset, condition); condition is "clean" or "<kind>:<name>@<severity>"."""

    model: str
    task: str
    dataset: str
    condition: str

    @property
    def group(self) -> tuple[str, str]:
        """The (task, dataset) whose samples are resampled together."""
        return (self.task, self.dataset)

    @property
    def is_clean(self) -> bool:
        return self.condition == CLEAN

    def clean_key(self) -> CellKey:
        """The clean cell this cell is paired with."""
        return CellKey(self.model, self.task, self.dataset, CLEAN)


@dataclass
class CellData:
    """Per-sample additive components of one cell and the function that turns summed components into
    the cell's primary score in [0, 1]."""

    key: CellKey
    sample_ids: list[str]
    components: FloatArray
    finish: Callable[[FloatArray], FloatArray]
    predictions: list[str] | None = None
    # The cell's chance level (a uniform guess among the candidates it scores); None when undefined.
    chance: float | None = None
    # A generative cell's share of answers in the form its questions ask for; None for other protocols.
    format_rate: float | None = None


def parse_condition(condition: str) -> tuple[str, int | None]:
    """Split "image:fog@3" into ("image:fog", 3); a condition without "@<int>" has no severity."""
    name, sep, sev = condition.rpartition("@")
    if sep and sev.isdigit():
        return name, int(sev)
    return condition, None


@dataclass(frozen=True)
class AxisValue:
    """A point value of an axis: value clamped to [0, 1] (None when undefined), the unclamped raw value,
    why it is undefined, and what went into it."""

    value: float | None
    raw: float | None
    undefined_reason: str | None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AxisSeries:
    """An axis over rows: row 0 is the full-sample estimate (it decides which terms are defined), rows
    1.. are bootstrap resamples evaluated over the same terms (NaN where a resample is degenerate)."""

    values: FloatArray | None
    raw: FloatArray | None
    undefined_reason: str | None
    detail: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def undefined(cls, reason: str, detail: dict[str, Any] | None = None) -> AxisSeries:
        return cls(None, None, reason, detail or {})

    @property
    def defined(self) -> bool:
        return self.values is not None

    def point(self) -> AxisValue:
        """The full-sample value (row 0)."""
        if self.values is None or self.raw is None:
            return AxisValue(None, None, self.undefined_reason, self.detail)
        return AxisValue(float(self.values[0]), float(self.raw[0]), None, self.detail)

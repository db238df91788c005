"""Input cells (the contract with tasks/runner) and the axis value types of the scorecard."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np
from numpy.typing import NDArray

CLEAN = "clean"  # the clean condition's id

FloatArray = NDArray[np.float64]

# What scoring does with a condition's cells: clean ones are the baseline, a perturbation's retention enters
# RR and the severity curves, a control's score the image-reliance table alone. A condition kind declares
# its role (perturb/kinds.py Role, which this wing cannot import; tests/test_condition_roles.py keeps the
# two equal, so that a kind whose role scoring does not know is refused when it is registered).
Role = Literal["clean", "perturbation", "control"]
ROLES: tuple[Role, ...] = get_args(Role)
CLEAN_ROLE, PERTURBATION, CONTROL = ROLES


@dataclass(frozen=True, order=True)
class ConditionRef:
    """A condition as scoring knows it, set by the runner from the run's Condition (perturb/ alone reads
    condition ids): its id ("clean", "image:fog@3"), role, the perturbation a severity curve pools it
    under ("image:fog"; "" when clean), its name ("swap": a control's entry in the reliance table) and
    severity (0 when clean). Equal, hashed and ordered by id alone: the rest follows from the id."""

    id: str
    role: Role = field(compare=False)
    perturbation: str = field(default="", compare=False)
    name: str = field(default="", compare=False)
    severity: int = field(default=0, compare=False)


CLEAN_REF = ConditionRef(CLEAN, CLEAN_ROLE)


@dataclass(frozen=True, order=True)
class CellKey:
    """One (model, task, dataset, condition); ordered as (model, task, dataset, condition id)."""

    model: str
    task: str
    dataset: str
    ref: ConditionRef

    @property
    def condition(self) -> str:
        """The condition's id, as results.json names the cell."""
        return self.ref.id

    @property
    def group(self) -> tuple[str, str]:
        """The (task, dataset) whose samples are resampled together."""
        return (self.task, self.dataset)

    @property
    def is_clean(self) -> bool:
        return self.ref.role == CLEAN_ROLE

    @property
    def is_perturbation(self) -> bool:
        """Whether the cell is a perturbation's: paired with its clean cell in RR and the severity curves."""
        return self.ref.role == PERTURBATION

    @property
    def is_control(self) -> bool:
        """Whether the cell is a control's: in the image-reliance table, never in RR or a severity curve."""
        return self.ref.role == CONTROL

    def clean_key(self) -> CellKey:
        """The clean cell this cell is paired with."""
        return CellKey(self.model, self.task, self.dataset, CLEAN_REF)

    def of_model(self, model: str) -> CellKey:
        """The same cell of another model."""
        return CellKey(model, self.task, self.dataset, self.ref)


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

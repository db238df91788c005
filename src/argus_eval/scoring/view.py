"""One model's scorecard as an axis or a head-to-head part reads it: its cells' rows by cell key (the
condition's role, perturbation and severity on the key's ConditionRef), their chance levels and
answer-format rates, its controls, its retention and its efficiency rows.

Every figure is a `Rows`: row 0 the full sample, then one per resample, and a flag saying whether its
spread comes from resampling the samples (and so narrows with more samples per cell). scoring/power.py
scales a view as a whole (`ScorecardView.scaled`) and needs no code per axis: resampled scores and
retention ratios shrink, while timing-trial figures and per-cell rates that are not resampled do not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from argus_eval.scoring.power import shrink
from argus_eval.scoring.types import AxisSeries, CellKey, FloatArray, Role

TaskDataset = tuple[str, str]


@dataclass(frozen=True)
class Rows:
    """A figure over rows (row 0 the full sample, rows 1.. resamples); shrinks: whether the spread of its
    rows comes from resampling samples, so that k times the samples would narrow it by sqrt(k)."""

    values: FloatArray
    shrinks: bool

    def scaled(self, s: float) -> Rows:
        """The rows pulled towards row 0 by s when they shrink with samples; as they are otherwise."""
        return Rows(shrink(self.values, s), True) if self.shrinks else self


def constant_rows(value: float, nrows: int) -> Rows:
    """A per-cell figure that is not resampled: the same value in every row, never shrunk."""
    return Rows(np.full(nrows, value), False)


@dataclass(frozen=True)
class CellView:
    """One scored cell: its key (role, perturbation, severity: key.ref), score rows (on the samples this
    view is about), chance level (None: undefined) and answer-format rate (None: not a generative cell)."""

    key: CellKey
    score: Rows
    chance: float | None = None
    format_rate: Rows | None = None

    def scaled(self, s: float) -> CellView:
        rate = None if self.format_rate is None else self.format_rate.scaled(s)
        return CellView(self.key, self.score.scaled(s), self.chance, rate)


@dataclass(frozen=True)
class ScorecardView:
    """What one model's axes and head-to-head parts are computed from (rows: full sample, resamples)."""

    model: str
    cells: Mapping[CellKey, CellView]  # every scored cell of the model, in key order
    retention: Mapping[CellKey, Rows] = field(default_factory=dict)  # perturbed cell -> min(1, p/c)
    unpaired: Mapping[str, str] = field(default_factory=dict)  # "task/dataset/cond" -> why no ratio
    floor: Mapping[CellKey, float] = field(default_factory=dict)  # clean cells at/below chance -> level
    expected: Mapping[str, list[str]] = field(default_factory=dict)  # task -> datasets any model ran
    efficiency_tasks: Mapping[str, Rows] = field(default_factory=dict)  # task -> E_task (timing trials)
    efficiency: AxisSeries = field(default_factory=lambda: AxisSeries.undefined("not measured"))

    def cell(self, key: CellKey) -> CellView | None:
        """The cell of that key, if the model scored it."""
        return self.cells.get(key)

    def of_role(self, role: Role) -> list[CellView]:
        """The cells whose condition has that role (clean, perturbation, control), in key order."""
        return [c for c in self.cells.values() if c.key.ref.role == role]

    def controls(self) -> list[CellView]:
        """The image-reliance controls' cells."""
        return self.of_role("control")

    def format_rates(self) -> dict[CellKey, Rows]:
        """Every generative cell's answer-format rate, by cell key."""
        return {k: c.format_rate for k, c in self.cells.items() if c.format_rate is not None}

    @cached_property
    def clean(self) -> dict[TaskDataset, FloatArray]:
        """Clean score rows per (task, dataset)."""
        return {k.group: c.score.values for k, c in self.cells.items() if k.is_clean}

    @cached_property
    def consistent(self) -> dict[TaskDataset, FloatArray]:
        """The clean cells above their chance level (CDC reads these)."""
        return {k.group: c.score.values for k, c in self.cells.items() if k.is_clean and k not in self.floor}

    @cached_property
    def below_chance(self) -> dict[str, str]:
        """ "task/dataset" -> why the clean cell is out of CDC."""
        return {
            f"{k.task}/{k.dataset}": f"score at or below chance ({lvl:.3f})" for k, lvl in self.floor.items()
        }

    @cached_property
    def ratios(self) -> dict[str, FloatArray]:
        """Retention rows by the perturbed cell's label "task/dataset/condition"."""
        return {f"{k.task}/{k.dataset}/{k.condition}": r.values for k, r in self.retention.items()}

    def scaled(self, s: float) -> ScorecardView:
        """The view with k = 1/s**2 times the samples per cell (scoring/power.py): every figure that shrinks
        with samples pulled towards its full-sample value, the rest as it is."""
        return replace(
            self,
            cells={k: c.scaled(s) for k, c in self.cells.items()},
            retention={k: r.scaled(s) for k, r in self.retention.items()},
            efficiency_tasks={t: r.scaled(s) for t, r in self.efficiency_tasks.items()},
        )


@dataclass(frozen=True)
class CellFacts:
    """What each cell's task reported beside its rows: chance levels and answer-format rates by key."""

    chance: Mapping[CellKey, float | None] = field(default_factory=dict)
    formats: Mapping[CellKey, float | None] = field(default_factory=dict)


def build_view(
    model: str,
    scores: Mapping[CellKey, FloatArray],
    facts: CellFacts | None = None,
    *,
    retention: Mapping[CellKey, FloatArray] | None = None,
    unpaired: Mapping[str, str] | None = None,
    floor: Mapping[CellKey, float] | None = None,
    expected: Mapping[str, list[str]] | None = None,
    efficiency_tasks: Mapping[tuple[str, str], FloatArray] | None = None,
    efficiency: AxisSeries | None = None,
) -> ScorecardView:
    """The view of one model from score rows of any cells (other models' are left out) and what their
    tasks reported; retention (perturbed cell -> ratio rows), floor and efficiency_tasks ((model, task) ->
    E_task rows) may hold other models' entries too.
    Scores and retention ratios are resampled from samples (they shrink); E_task rows come from timing
    trials (they do not)."""
    got = facts or CellFacts()
    cells = {}
    for k in sorted(k for k in scores if k.model == model):
        rows = scores[k]
        rate = got.formats.get(k)
        form = None if rate is None else constant_rows(rate, len(rows))
        cells[k] = CellView(k, Rows(rows, True), got.chance.get(k), form)
    return ScorecardView(
        model,
        cells,
        {k: Rows(r, True) for k, r in (retention or {}).items() if k.model == model},
        dict(unpaired or {}),
        {k: v for k, v in sorted((floor or {}).items()) if k.model == model},
        dict(expected or {}),
        {t: Rows(r, False) for (m, t), r in (efficiency_tasks or {}).items() if m == model},
        AxisSeries.undefined("not measured") if efficiency is None else efficiency,
    )

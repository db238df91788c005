"""The scorecard's blocks of results.json: declared axes, per-model rows, scored cells, rankings, the gap
and the head-to-head comparison."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from pydantic import ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from argus_eval.results_model.base import (
    Block,
    Count,
    Json,
    Measured,
    ModelPair,
    Number,
    Score,
    ScoreInterval,
    Signed,
    SignedInterval,
)
from argus_eval.results_model.efficiency import EfficiencyBlock


class AxisInfo(Block):
    """One declared axis (scoring's axis registry), in display order: the reports show what is listed."""

    name: str
    label: str
    description: str
    radar: bool = False  # drawn on the radar chart of the base axes


class AxisDetail(Block):
    """What went into an axis; free-form per axis, except per_task, which readers use when present."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, Json] = Field(init=False)

    per_task: dict[str, Score | None] | None = None


class RetentionIntervals(Block):
    """Bootstrap intervals of a perturbed cell's retention and flip rate (absent without resamples)."""

    retention: ScoreInterval = None
    flip_rate: ScoreInterval = None


class Retention(Block):
    """One perturbed cell of a model against its clean cell, paired on the same samples."""

    task: str
    dataset: str
    condition: str
    perturbation: str | None = None
    severity: int | None = None
    clean: Score | None
    perturbed: Score | None
    retention: Score | None
    flip_rate: Score | None
    intervals: RetentionIntervals


class ModelRow(Block):
    """One model's scorecard row. Each declared axis is a key of its own (models.<name>.<axis>: its value,
    null when undefined), beside raw values, reasons, details, intervals, retention and severity curves."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, Score | None] = Field(init=False)  # each axis's value, in [0, 1]

    raw: dict[str, Number | None]
    undefined: dict[str, str]
    detail: dict[str, AxisDetail]
    intervals: dict[str, ScoreInterval]
    retention: list[Retention]
    severity_curves: dict[str, dict[str, Score | None]]
    efficiency: EfficiencyBlock | None

    def value(self, axis: str) -> float | None:
        """The axis's point value (None when undefined or not in this row)."""
        return self.axis_values().get(axis)

    def axis_values(self) -> dict[str, float | None]:
        """Every axis key of the row and its value."""
        return dict(self.__pydantic_extra__)

    def interval(self, axis: str) -> tuple[float, float] | None:
        """The axis's interval, when both the value and the interval are defined."""
        iv = self.intervals.get(axis)
        return None if iv is None or self.value(axis) is None else iv

    def why_undefined(self, axis: str) -> str:
        """The recorded reason an axis is undefined."""
        return self.undefined.get(axis, "no reason recorded")

    def per_task(self, axis: str) -> dict[str, float | None] | None:
        """detail.<axis>.per_task, when the axis reports one."""
        d = self.detail.get(axis)
        return None if d is None else d.per_task


class ExtraScore(Block):
    """A cell's further official score (e.g. VCR's QA->R) on the same paired resamples as its primary."""

    score: Score | None
    interval: ScoreInterval


class CellKeyFields(Block):
    """The (model, task, dataset, condition) of a cell; perturbation and severity for perturbed ones."""

    model: str
    task: str
    dataset: str
    condition: str
    perturbation: str | None = None
    severity: int | None = None

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.model, self.task, self.dataset, self.condition)

    @property
    def is_clean(self) -> bool:
        """Whether this is a clean cell: scoring gives every other cell its perturbation (the condition's
        kind and name, from the condition itself; this wing never reads an id)."""
        return self.perturbation is None


class ScorecardCell(CellKeyFields):
    """A cell's primary score on the samples its model scored in every condition of the cell's (task,
    dataset), with its interval; n_dropped: samples this cell scored that another condition did not."""

    score: Score | None
    n_samples: Count
    n_dropped: Count
    interval: ScoreInterval
    chance: Score | None
    extras: dict[str, ExtraScore] | None = None


class BelowChance(CellKeyFields):
    """A clean cell at or below its chance level (counted in P, left out of CDC)."""

    score: Score | None
    chance: Score | None


class RankEntry(Block):
    """One model's supported rank (ties share one), head-to-head win rate and the axis value."""

    model: str
    rank: int | None
    win_rate: Score | None
    value: Score | None


Pairwise = dict[str, dict[str, dict[str, Score | None]]]
"""axis -> A -> B -> a share (P(A beats B)) or a head-to-head score h(A, B)."""


class Rankings(Block):
    """Capability (P) and overall (ARGUS) rankings, and the bootstrap's pairwise shares."""

    basis: str
    capability: list[RankEntry]
    overall: list[RankEntry]
    pairwise: Pairwise | None

    def share(self, axis: str, a: str, b: str) -> float | None:
        """P(a beats b) on an axis ("ARGUS" or "P"); None without a bootstrap or a share for the pair."""
        table = (self.pairwise or {}).get(axis) or {}
        return table.get(a, {}).get(b)

    def ranks(self, which: str) -> dict[str, int | None]:
        """model -> rank in "capability" or "overall"."""
        entries = self.capability if which == "capability" else self.overall
        return {r.model: r.rank for r in entries}


class Gap(Block):
    """The capability-reliability gap: the sentence, Kendall's tau and each model's rank shift."""

    sentence: str | None
    kendall_tau: Signed | None
    kendall_tau_interval: SignedInterval
    rank_shift: dict[str, int | None]


class Claim(Block):
    """A supported 'above above below' on an axis, with P(above beats below)."""

    axis: str
    above: str
    below: str
    p: Score | None


class Tie(Block):
    """A comparable pair the run cannot separate on an axis, and what would separate them."""

    axis: str
    models: ModelPair
    p: Score | None
    separate_by: str
    # About how many samples per shared cell a rerun would need for the claim (scoring/power.py); None
    # when even 10,000x the samples would not separate them (absent: no bootstrap, or an older file).
    samples_to_separate: Count | None = None


class NotComparable(Block):
    """A pair with no shared cell."""

    models: ModelPair
    reason: str


class ShortCell(CellKeyFields):
    """A shared cell one model of a pair did not complete: how many of its samples it scored."""

    scored: int
    samples: int


class Incomplete(Block):
    """A pair about which no claim is made on an axis: a model did not score enough of a shared cell."""

    axis: str
    models: ModelPair
    p: Score | None
    reason: str
    cells: list[ShortCell]


class CommonSamples(Block):
    """The samples a pair is compared on: per shared "task/dataset", those both models scored."""

    models: ModelPair
    n: int  # over every shared (task, dataset)
    cells: dict[str, int]


class Withheld(Block):
    """A comparable pair about which no claim is made, and why (scoring/format_gate.py)."""

    models: ModelPair
    reason: str


class ComparisonBlock(Block):
    """The head-to-head comparison of every pair of models (docs/comparisons.md)."""

    method: str
    claim_confidence: Score
    claims: list[Claim]
    ties: list[Tie]
    not_comparable: list[NotComparable]
    head_to_head: Pairwise
    win_rate: dict[str, dict[str, Score | None]]
    shared_parts: dict[str, dict[str, dict[str, int]]]
    # absent from files written before failures were separated per model
    claim_min_scored: Score | None = None
    incomplete: list[Incomplete] = Field(default_factory=list)
    common_samples: list[CommonSamples] = Field(default_factory=list)
    # absent from files written before the answer-format rule
    withheld: list[Withheld] = Field(default_factory=list)

    def not_comparable_reason(self, a: str, b: str) -> str | None:
        """Why a and b (either order) are not comparable, if they are not."""
        return next((nc.reason for nc in _of_pair(self.not_comparable, a, b)), None)

    def no_claim(self, a: str, b: str, axis: str) -> tuple[str, str] | None:
        """Why no claim is made about a and b (either order) on an axis ("capability", "overall"), if
        none is: ("incomplete", reason) or ("no claim", reason) for a withheld pair."""
        inc = next((i.reason for i in _of_pair(self.incomplete, a, b) if i.axis == axis), None)
        if inc is not None:
            return "incomplete", inc
        held = next((w.reason for w in _of_pair(self.withheld, a, b)), None)
        return None if held is None else ("no claim", held)

    def common(self, a: str, b: str) -> CommonSamples | None:
        """The samples a and b (either order) are compared on."""
        return next(iter(_of_pair(self.common_samples, a, b)), None)


class _PairEntry(Protocol):
    @property
    def models(self) -> ModelPair: ...


_E = TypeVar("_E", bound=_PairEntry)


def _of_pair(entries: Sequence[_E], a: str, b: str) -> list[_E]:
    """The entries about the pair a, b (either order)."""
    pair = sorted((a, b))
    return [e for e in entries if sorted(e.models) == pair]


class BootstrapBlock(Block):
    """How the intervals were made."""

    resamples: Count
    seed: int
    confidence: Score
    notes: list[str]


class ScoringOptionsEcho(Block):
    """The scoring options the run used, as scoring recorded them; the fields readers use are typed."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, Json] = Field(init=False)

    weights: dict[str, Measured]
    claim_confidence: Score
    confidence: Score
    resamples: Count
    seed: int
    # below it a clean generative cell makes no claim (absent in runs written before the rule)
    min_format_rate: Score | None = None


class ScorecardPart(Block):
    """What scoring contributes to results.json: the declared axes, a row per model with a value for
    each of them, the scored cells, rankings, the gap, the comparison and how the intervals were made."""

    axes: list[AxisInfo]
    models: dict[str, ModelRow]
    rankings: Rankings
    gap: Gap
    comparison: ComparisonBlock
    below_chance: list[BelowChance]
    scorecard_cells: list[ScorecardCell]
    bootstrap: BootstrapBlock | None
    scoring_options: ScoringOptionsEcho

    @model_validator(mode="after")
    def _every_model_has_every_axis(self) -> ScorecardPart:
        names = self.axis_names
        for model, row in self.models.items():
            have = row.axis_values()
            wrong = [(a, "axis_missing", "Field required (a declared axis)") for a in names if a not in have]
            wrong += [
                (k, "axis_unknown", "Extra inputs are not permitted (not a field, not a declared axis)")
                for k in have
                if k not in names
            ]
            if wrong:
                key, kind, what = wrong[0]
                raise PydanticCustomError(kind, "models.{m}.{k}: {w}", {"m": model, "k": key, "w": what})
        return self

    @property
    def axis_names(self) -> tuple[str, ...]:
        """The declared axes in display order."""
        return tuple(a.name for a in self.axes)

    @property
    def radar_axes(self) -> tuple[str, ...]:
        """The base axes drawn on the radar chart."""
        return tuple(a.name for a in self.axes if a.radar)

    def model_order(self) -> list[str]:
        """Models by overall rank (then any model without one), as the scorecard lists them."""
        ranked = [r.model for r in self.rankings.overall if r.model in self.models]
        return ranked + [m for m in self.models if m not in ranked]

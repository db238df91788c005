"""The ARGUS scorecard: per-cell scores, P, CDC, RR, E, ARGUS and R per model, rankings, the
capability-reliability gap, and (with the bootstrap) percentile intervals and pairwise rank shares."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.efficiency.trials import TaskTiming
from argus_eval.scoring.axes import efficiency_axis
from argus_eval.scoring.axis_registry import axis_names
from argus_eval.scoring.efficiency_axis import efficiency_from_timings
from argus_eval.scoring.engine import ModelRows, at_or_below_chance, expected_datasets, model_rows
from argus_eval.scoring.format_gate import FormatGate, format_gate
from argus_eval.scoring.headtohead import HeadToHead, head_to_head, pair_inputs
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.paired import Group, align, group_rows, paired_counts
from argus_eval.scoring.statistics import percentile_interval
from argus_eval.scoring.types import AxisSeries, AxisValue, CellData, CellKey, FloatArray

Interval = tuple[float, float] | None

BOOTSTRAP_NOTES = (
    "paired: one multinomial resample of the common sample ids per (task, dataset), shared by every "
    "model and condition of that (task, dataset)",
    "every cell score, axis, ARGUS and R is recomputed from each resample; corpus-level statistics "
    "inside a cell's finish (e.g. CIDEr document frequencies) are those its task provides",
    "efficiency (E) from timing trials: each (model, task)'s trials are resampled with replacement in every "
    "row (median latency and throughput), so E and ARGUS carry the timing noise; memory and FLOPs are fixed",
    "percentile intervals skip resamples in which a term is degenerate (e.g. a clean score of 0)",
)


@dataclass(frozen=True)
class CellScore:
    """Primary score of one cell on the common sample ids of its (task, dataset)."""

    key: CellKey
    score: float
    n_samples: int
    n_dropped: int
    interval: Interval = None
    chance: float | None = None


@dataclass(frozen=True)
class RetentionEntry:
    """One perturbed cell against its clean cell: retention min(1, perturbed/clean) and flip rate."""

    key: CellKey
    clean: float
    perturbed: float
    retention: float | None
    flip_rate: float | None
    intervals: dict[str, Interval]


@dataclass(frozen=True)
class ModelCard:
    """Every axis of one model (point values), their intervals, retention table and severity curves."""

    name: str
    axes: dict[str, AxisValue]
    intervals: dict[str, Interval]
    retention: list[RetentionEntry]
    severity_curves: dict[str, dict[int, float | None]]
    efficiency: EfficiencyProfile | None


@dataclass(frozen=True)
class BootstrapInfo:
    """How the intervals were made, and pairwise shares: pairwise[axis][A][B] = P(A ranks above B)."""

    resamples: int
    seed: int
    confidence: float
    pairwise: dict[str, dict[str, dict[str, float | None]]]
    notes: tuple[str, ...] = BOOTSTRAP_NOTES


@dataclass(frozen=True)
class Scorecard:
    """The whole scorecard (scoring.results_blocks turns it into results.json blocks)."""

    options: ScoringOptions
    models: dict[str, ModelCard]
    cells: list[CellScore]
    comparison: HeadToHead
    bootstrap: BootstrapInfo | None


def _point(rows: FloatArray | None) -> float | None:
    if rows is None or np.isnan(rows[0]):
        return None
    return float(rows[0])


@dataclass(frozen=True)
class _Rows:
    scores: dict[CellKey, FloatArray]
    models: dict[str, ModelRows]
    e_tasks: dict[tuple[str, str], FloatArray]
    floor: dict[CellKey, float]  # clean cells at or below chance (decided by row 0)


@dataclass(frozen=True)
class _Efficiency:
    """Where E comes from: per-model profiles (constant) or per-task timing trials (resampled)."""

    profiles: Mapping[str, EfficiencyProfile | None]
    timings: Mapping[tuple[str, str], TaskTiming] | None
    undefined: Mapping[str, str]

    def rows(
        self, models: list[str], options: ScoringOptions, resamples: int
    ) -> tuple[dict[str, AxisValue | AxisSeries], dict[tuple[str, str], FloatArray]]:
        if self.timings is None:
            values = efficiency_axis(
                {m: self.profiles.get(m) for m in models}, options.efficiency_mode, options.budgets
            )
            return dict(values), {}
        er = efficiency_from_timings(
            self.timings,
            models,
            resamples,
            options.seed,
            options.efficiency_mode,
            options.budgets,
            self.undefined,
        )
        return dict(er.axes), er.per_task


def _rows(
    groups: list[Group],
    eff: _Efficiency,
    models: list[str],
    options: ScoringOptions,
    resamples: int,
    chance: Mapping[CellKey, float | None],
) -> _Rows:
    """Cell score rows and every model's axis rows for the full sample plus `resamples` resamples."""
    scores: dict[CellKey, FloatArray] = {}
    flips: dict[CellKey, FloatArray] = {}
    for g in groups:
        counts = paired_counts(g, resamples, options.seed)
        cell_rows, flip_rows = group_rows(g, counts)
        scores.update(cell_rows)
        flips.update(flip_rows)
    expected = expected_datasets(list(scores))
    floor = at_or_below_chance(scores, chance)
    e_values, e_tasks = eff.rows(models, options, resamples)
    rows = {m: model_rows(m, scores, flips, e_values[m], options, expected, floor) for m in models}
    return _Rows(scores, rows, e_tasks, floor)


def _comparison(rows: _Rows, models: list[str], options: ScoringOptions, gate: FormatGate) -> HeadToHead:
    inputs = pair_inputs(
        rows.scores,
        rows.floor,
        {m: [(r.key, r.ratio) for r in rows.models[m].retention] for m in models},
        rows.e_tasks,
    )
    return head_to_head(
        models,
        replace(inputs, gate=gate),
        options.weights.as_dict(),
        options.cdc_variant,
        options.claim_confidence,
        options.confidence,
    )


def _build(
    cells: Sequence[CellData],
    eff: _Efficiency,
    options: ScoringOptions,
    resamples: int,
) -> Scorecard:
    groups = align(cells)
    sizes = {a.cell.key: (len(g.ids), a.dropped) for g in groups for a in g.cells}
    chance = {c.key: c.chance for c in cells}
    models = sorted({k.model for k in sizes})
    # The point values come from a run without resamples so they do not depend on the resample count
    # (not even in the last bit); the resample run repeats row 0 and adds the resamples.
    point = _rows(groups, eff, models, options, 0, chance)
    boot = _rows(groups, eff, models, options, resamples, chance) if resamples else None

    def interval(r: FloatArray | None) -> Interval:
        return percentile_interval(r, options.confidence)

    cards: dict[str, ModelCard] = {}
    for m in models:
        mr = point.models[m]
        br = boot.models[m] if boot is not None else None
        retention = [
            RetentionEntry(
                r.key,
                float(r.clean[0]),
                float(r.perturbed[0]),
                _point(r.ratio),
                _point(r.flip),
                {} if br is None else {"retention": interval(b.ratio), "flip_rate": interval(b.flip)},
            )
            for r, b in zip(mr.retention, br.retention if br is not None else mr.retention, strict=True)
        ]
        curves = {name: {s: _point(v) for s, v in c.items()} for name, c in mr.curves.items()}
        card_intervals = {} if br is None else {a: interval(br.axes[a].values) for a in axis_names()}
        axes = {a: mr.axes[a].point() for a in axis_names()}
        cards[m] = ModelCard(m, axes, card_intervals, retention, curves, eff.profiles.get(m))
    cell_list = [
        CellScore(
            k,
            float(v[0]),
            sizes[k][0],
            sizes[k][1],
            None if boot is None else interval(boot.scores[k]),
            chance.get(k),
        )
        for k, v in sorted(point.scores.items())
    ]
    gate = format_gate({c.key: c.format_rate for c in cells}, options.min_format_rate)
    comparison = _comparison(boot if boot is not None else point, models, options, gate)
    info = None
    if boot is not None:
        info = BootstrapInfo(resamples, options.seed, options.confidence, comparison.pairwise)
    return Scorecard(options, cards, cell_list, comparison, info)


def compute_scorecard(
    cells: Sequence[CellData],
    efficiency: Mapping[str, EfficiencyProfile | None],
    options: ScoringOptions,
    timings: Mapping[tuple[str, str], TaskTiming] | None = None,
    timing_undefined: Mapping[str, str] | None = None,
) -> Scorecard:
    """Point values of every cell metric and axis, rankings and the gap (no intervals, no claims)."""
    eff = _Efficiency(efficiency, timings, timing_undefined or {})
    return _build(cells, eff, options, resamples=0)


def bootstrap_scorecard(
    cells: Sequence[CellData],
    efficiency: Mapping[str, EfficiencyProfile | None],
    options: ScoringOptions,
    timings: Mapping[tuple[str, str], TaskTiming] | None = None,
    timing_undefined: Mapping[str, str] | None = None,
) -> Scorecard:
    """compute_scorecard plus options.resamples paired resamples: percentile intervals for every cell
    score, retention, flip rate, axis and ARGUS, and the head-to-head verdicts P(A beats B) on capability
    and overall. Point values are identical to compute_scorecard's. With timings, E is computed per
    task from the timing trials and resampled with them; with per-model profiles only, E is constant."""
    eff = _Efficiency(efficiency, timings, timing_undefined or {})
    return _build(cells, eff, options, resamples=options.resamples)

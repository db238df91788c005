"""The ARGUS scorecard: per-cell scores, P, CDC, RR, E, ARGUS and R per model, rankings, the
capability-reliability gap, and (with the bootstrap) percentile intervals and pairwise rank shares."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.scoring.axes import efficiency_axis
from argus_eval.scoring.engine import AXES, ModelRows, expected_datasets, model_rows
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.paired import Group, align, group_rows, paired_counts
from argus_eval.scoring.ranking import RankingComparison, compare_rankings
from argus_eval.scoring.statistics import pairwise_shares, percentile_interval
from argus_eval.scoring.types import AxisValue, CellData, CellKey, FloatArray, parse_condition

SCHEMA = "argus-scorecard/1"

Interval = tuple[float, float] | None

BOOTSTRAP_NOTES = (
    "paired: one multinomial resample of the common sample ids per (task, dataset), shared by every "
    "model and condition of that (task, dataset)",
    "every cell score, axis, ARGUS and R is recomputed from each resample; corpus-level statistics "
    "inside a cell's finish (e.g. CIDEr document frequencies) are those its task provides",
    "efficiency figures (E) are measurements, not samples: they are not resampled",
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
    """The whole scorecard; to_json() gives the results.json block."""

    options: ScoringOptions
    models: dict[str, ModelCard]
    cells: list[CellScore]
    ranking: RankingComparison
    bootstrap: BootstrapInfo | None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (dicts, lists, str, int, float, None); key order is deterministic."""
        out: dict[str, Any] = _clean(
            {
                "schema": SCHEMA,
                "options": self.options.model_dump(mode="json"),
                "models": {name: _model_json(card) for name, card in self.models.items()},
                "rankings": _rankings_json(self),
                "gap": {
                    "sentence": self.ranking.sentence,
                    "kendall_tau": self.ranking.kendall_tau,
                    "rank_shift": self.ranking.shift,
                },
                "cells": [_cell_json(c) for c in self.cells],
                "bootstrap": None
                if self.bootstrap is None
                else {
                    "resamples": self.bootstrap.resamples,
                    "seed": self.bootstrap.seed,
                    "confidence": self.bootstrap.confidence,
                    "notes": list(self.bootstrap.notes),
                },
            }
        )
        return out


def _key_json(key: CellKey) -> dict[str, Any]:
    perturbation, severity = parse_condition(key.condition)
    out: dict[str, Any] = {"model": key.model, "task": key.task, "dataset": key.dataset}
    out["condition"] = key.condition
    if not key.is_clean:
        out["perturbation"] = perturbation
        out["severity"] = severity
    return out


def _cell_json(c: CellScore) -> dict[str, Any]:
    out = _key_json(c.key)
    out.update(score=c.score, n_samples=c.n_samples, n_dropped=c.n_dropped, interval=c.interval)
    return out


def _model_json(card: ModelCard) -> dict[str, Any]:
    out: dict[str, Any] = {axis: card.axes[axis].value for axis in AXES}
    out["raw"] = {axis: card.axes[axis].raw for axis in AXES}
    out["undefined"] = {
        axis: v.undefined_reason for axis, v in card.axes.items() if v.undefined_reason is not None
    }
    out["detail"] = {axis: card.axes[axis].detail for axis in AXES}
    out["intervals"] = card.intervals
    out["retention"] = [
        {
            **{k: v for k, v in _key_json(r.key).items() if k != "model"},
            "clean": r.clean,
            "perturbed": r.perturbed,
            "retention": r.retention,
            "flip_rate": r.flip_rate,
            "intervals": r.intervals,
        }
        for r in card.retention
    ]
    out["severity_curves"] = {
        name: {str(s): v for s, v in curve.items()} for name, curve in card.severity_curves.items()
    }
    out["efficiency"] = None if card.efficiency is None else card.efficiency.to_json()
    return out


def _ranking_list(ranks: Mapping[str, int | None], card_axis: str, sc: Scorecard) -> list[dict[str, Any]]:
    order = sorted(ranks, key=lambda m: (ranks[m] is None, ranks[m] or 0, m))
    return [{"model": m, "rank": ranks[m], "value": sc.models[m].axes[card_axis].value} for m in order]


def _rankings_json(sc: Scorecard) -> dict[str, Any]:
    return {
        "capability": _ranking_list(sc.ranking.capability, "P", sc),
        "overall": _ranking_list(sc.ranking.overall, "ARGUS", sc),
        "pairwise": None if sc.bootstrap is None else sc.bootstrap.pairwise,
    }


def _clean(obj: Any) -> Any:
    """numpy scalars -> Python numbers, NaN/inf -> None, tuples -> lists; dict order is kept."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(float(obj)) else None
    return obj


def _point(rows: FloatArray | None) -> float | None:
    if rows is None or np.isnan(rows[0]):
        return None
    return float(rows[0])


@dataclass(frozen=True)
class _Rows:
    scores: dict[CellKey, FloatArray]
    models: dict[str, ModelRows]


def _rows(
    groups: list[Group], e_values: Mapping[str, AxisValue], options: ScoringOptions, resamples: int
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
    models = {m: model_rows(m, scores, flips, e_values[m], options, expected) for m in e_values}
    return _Rows(scores, models)


def _build(
    cells: Sequence[CellData],
    efficiency: Mapping[str, EfficiencyProfile | None],
    options: ScoringOptions,
    resamples: int,
) -> Scorecard:
    groups = align(cells)
    sizes = {a.cell.key: (len(g.ids), a.dropped) for g in groups for a in g.cells}
    models = sorted({k.model for k in sizes})
    e_values = efficiency_axis(
        {m: efficiency.get(m) for m in models}, options.efficiency_mode, options.budgets
    )
    # The point values come from a run without resamples so they do not depend on the resample count
    # (not even in the last bit); the resample run repeats row 0 and adds the resamples.
    point = _rows(groups, e_values, options, 0)
    boot = _rows(groups, e_values, options, resamples) if resamples else None

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
        card_intervals = {} if br is None else {a: interval(br.axes[a].values) for a in AXES}
        axes = {a: mr.axes[a].point() for a in AXES}
        cards[m] = ModelCard(m, axes, card_intervals, retention, curves, efficiency.get(m))
    cell_list = [
        CellScore(
            k,
            float(v[0]),
            sizes[k][0],
            sizes[k][1],
            None if boot is None else interval(boot.scores[k]),
        )
        for k, v in sorted(point.scores.items())
    ]
    ranking = compare_rankings(
        {m: cards[m].axes["P"].value for m in models}, {m: cards[m].axes["ARGUS"].value for m in models}
    )
    info = None
    if boot is not None:
        pairwise = {
            axis: pairwise_shares({m: boot.models[m].axes[axis].values for m in models})
            for axis in ("ARGUS", "P")
        }
        info = BootstrapInfo(resamples, options.seed, options.confidence, pairwise)
    return Scorecard(options, cards, cell_list, ranking, info)


def compute_scorecard(
    cells: Sequence[CellData],
    efficiency: Mapping[str, EfficiencyProfile | None],
    options: ScoringOptions,
) -> Scorecard:
    """Point values of every cell metric and axis, rankings and the gap (no intervals)."""
    return _build(cells, efficiency, options, resamples=0)


def bootstrap_scorecard(
    cells: Sequence[CellData],
    efficiency: Mapping[str, EfficiencyProfile | None],
    options: ScoringOptions,
) -> Scorecard:
    """compute_scorecard plus options.resamples paired resamples: percentile intervals for every cell
    score, retention, flip rate, axis and ARGUS, and pairwise shares of resamples in which A ranks above
    B on ARGUS and on P. Point values are identical to compute_scorecard's. E is not resampled."""
    return _build(cells, efficiency, options, resamples=options.resamples)

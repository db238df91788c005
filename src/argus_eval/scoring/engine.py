"""Per-model axes from cell score rows: one code path for the point estimate and every resample."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from argus_eval.scoring.axes import retention_ratios
from argus_eval.scoring.axis_registry import AxisInputs, axis_specs
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.types import AxisSeries, AxisValue, CellKey, FloatArray
from argus_eval.scoring.view import CellFacts, build_view


@dataclass(frozen=True)
class RetentionRows:
    """One perturbed cell paired with its clean cell."""

    key: CellKey
    clean: FloatArray
    perturbed: FloatArray
    ratio: FloatArray
    flip: FloatArray | None


@dataclass(frozen=True)
class ModelRows:
    """Every axis of one model (rows), its retention table and severity curves."""

    axes: dict[str, AxisSeries]
    retention: list[RetentionRows]
    curves: dict[str, dict[int, FloatArray]]


def expected_datasets(keys: list[CellKey]) -> dict[str, list[str]]:
    """task -> datasets with a clean cell for any model (what a model 'should' have)."""
    out: dict[str, set[str]] = {}
    for k in keys:
        if k.is_clean:
            out.setdefault(k.task, set()).add(k.dataset)
    return {t: sorted(d) for t, d in sorted(out.items())}


def constant_series(value: AxisValue, nrows: int) -> AxisSeries:
    """An axis that is not resampled (E): the same value in every row."""
    if value.value is None:
        return AxisSeries.undefined(str(value.undefined_reason), value.detail)
    raw = value.value if value.raw is None else value.raw
    return AxisSeries(np.full(nrows, value.value), np.full(nrows, raw), None, value.detail)


def _severity_curves(retention: list[RetentionRows]) -> dict[str, dict[int, FloatArray]]:
    """perturbation -> severity -> mean retention over its (task, dataset) cells (clean 0 left out)."""
    pooled: dict[str, dict[int, list[FloatArray]]] = {}
    for r in retention:
        if np.isnan(r.ratio[0]):
            continue
        pooled.setdefault(r.key.ref.perturbation, {}).setdefault(r.key.ref.severity, []).append(r.ratio)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN resample rows stay NaN
        return {
            name: {s: np.nanmean(np.stack(v), axis=0) for s, v in sorted(sev.items())}
            for name, sev in sorted(pooled.items())
        }


def at_or_below_chance(
    scores: Mapping[CellKey, FloatArray], chance: Mapping[CellKey, float | None]
) -> dict[CellKey, float]:
    """Clean cells whose full-sample score is at or below their chance level: cell -> chance level."""
    out = {}
    for k, rows in scores.items():
        level = chance.get(k)
        if k.is_clean and level is not None and rows[0] <= level + 1e-12:
            out[k] = level
    return out


def retention_rows(
    model: str, scores: Mapping[CellKey, FloatArray], flips: Mapping[CellKey, FloatArray]
) -> tuple[list[RetentionRows], dict[str, str]]:
    """Each perturbed cell of the model paired with its clean cell (controls measure image reliance,
    not robustness, and are left out), and the perturbed cells with no clean cell to pair with."""
    retention: list[RetentionRows] = []
    unpaired: dict[str, str] = {}
    for k in sorted(k for k in scores if k.model == model):
        if not k.is_perturbation:
            continue
        c = scores.get(k.clean_key())
        if c is None:
            unpaired[f"{k.task}/{k.dataset}/{k.condition}"] = "no clean cell to pair with"
            continue
        retention.append(RetentionRows(k, c, scores[k], retention_ratios(c, scores[k]), flips.get(k)))
    return retention, unpaired


def model_rows(
    model: str,
    scores: Mapping[CellKey, FloatArray],
    flips: Mapping[CellKey, FloatArray],
    efficiency: AxisValue | AxisSeries,
    options: ScoringOptions,
    expected: Mapping[str, list[str]],
    below_chance: Mapping[CellKey, float] | None = None,
    nrows: int | None = None,
    left_out: Mapping[CellKey, str] | None = None,
    facts: CellFacts | None = None,
    e_tasks: Mapping[tuple[str, str], FloatArray] | None = None,
) -> ModelRows:
    """All axes of one model; rows of every array are (full sample, resample 1, ...); nrows: how many
    (default: those of the score rows; needed when no cell has a score); left_out: cells that have no
    score rows and why (RR names them); facts: the cells' chance levels and answer-format rates; e_tasks:
    (model, task) -> E_task rows, when E comes from timing trials.

    A clean cell at or below its chance level counts in P (as the failure it is) but not in CDC:
    relative deviations around a near-zero mean measure noise, not consistency."""
    if nrows is None:
        nrows = len(next(iter(scores.values())))
    retention, unpaired = retention_rows(model, scores, flips)
    for k, why in sorted((left_out or {}).items()):
        if k.model == model and k.is_perturbation:
            unpaired[f"{k.task}/{k.dataset}/{k.condition}"] = why
    view = build_view(
        model,
        scores,
        facts,
        retention={r.key: r.ratio for r in retention},
        unpaired=unpaired,
        floor=below_chance,
        expected=expected,
        efficiency_tasks=e_tasks,
        efficiency=efficiency if isinstance(efficiency, AxisSeries) else constant_series(efficiency, nrows),
    )
    axes: dict[str, AxisSeries] = {}
    for spec in axis_specs():  # in order: an axis may read the ones before it (ARGUS, R)
        axes[spec.name] = spec.compute(AxisInputs(view, options, axes))
    return ModelRows(axes, retention, _severity_curves(retention))

"""The ARGUS axes as pure numpy functions over score rows.

Every function takes per-(task, dataset) score rows: row 0 is the full-sample estimate and decides which
terms are defined (and what is left out, by name); rows 1.. are bootstrap resamples evaluated over the
same terms, so the point value and its interval come from one code path. A resample that is degenerate
for a term (e.g. a mean of 0) gives NaN in that row.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from argus_eval.errors import MetricError
from argus_eval.results_model.weights import normalised
from argus_eval.scoring.efficiency_axis import efficiency_axis
from argus_eval.scoring.types import AxisSeries, FloatArray

__all__ = [
    "argus_axis",
    "capability_axis",
    "cdc",
    "cdc_axis",
    "cdc_cv",
    "efficiency_axis",
    "reliability_axis",
    "retention_axis",
    "retention_ratios",
    "weighted_mean_axis",
]

TaskDataset = tuple[str, str]


def _mad_consistency(a: FloatArray) -> FloatArray:
    """(rows, D) -> 1 - mean_d |a_d - mean(a)| / mean(a) per row; NaN where the mean is 0."""
    m = a.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1.0 - np.abs(a - m[:, None]).mean(axis=1) / m
    return np.where(m == 0, np.nan, out)


def _cv_consistency(a: FloatArray) -> FloatArray:
    """(rows, D) -> 1 - std(a) / mean(a) per row (population std, ddof=0); NaN where the mean is 0."""
    m = a.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1.0 - a.std(axis=1) / m
    return np.where(m == 0, np.nan, out)


def _check_cdc_input(scores: Sequence[float]) -> FloatArray:
    a = np.asarray(scores, dtype=np.float64)
    if a.ndim != 1 or a.size < 2:
        raise MetricError(f"CDC needs at least two per-dataset scores, got {a.size}")
    if a.mean() == 0:
        raise MetricError("CDC is undefined when the mean per-dataset score is 0")
    return a


def cdc(scores: Sequence[float]) -> float:
    """The paper's CDC, unclamped: 1 - mean_d |a_d - mean(a)| / mean(a). cdc([84.5, 62.3]) = 0.848774.

    Raises MetricError with fewer than two scores or a mean of 0 (the scorecard reports those as undefined).
    """
    return float(_mad_consistency(_check_cdc_input(scores)[None, :])[0])


def cdc_cv(scores: Sequence[float]) -> float:
    """The "cv" variant, unclamped: 1 - std(a) / mean(a) (population std)."""
    return float(_cv_consistency(_check_cdc_input(scores)[None, :])[0])


def _by_task(clean: Mapping[TaskDataset, FloatArray]) -> dict[str, dict[str, FloatArray]]:
    groups: dict[str, dict[str, FloatArray]] = {}
    for (task, dataset), rows in sorted(clean.items()):
        groups.setdefault(task, {})[dataset] = rows
    return groups


def _pooled(clean: Mapping[TaskDataset, FloatArray]) -> dict[str, dict[str, FloatArray]]:
    # a_d = mean of the model's task scores on dataset d, then one CDC over datasets.
    per_dataset: dict[str, list[FloatArray]] = {}
    for (_task, dataset), rows in sorted(clean.items()):
        per_dataset.setdefault(dataset, []).append(rows)
    return {"pooled": {d: np.mean(np.stack(r), axis=0) for d, r in per_dataset.items()}}


Grouping = Callable[[Mapping[TaskDataset, FloatArray]], dict[str, dict[str, FloatArray]]]
Formula = Callable[[FloatArray], FloatArray]

# cdc_variant -> (how datasets are grouped, which dispersion formula)
CDC_VARIANTS: dict[str, tuple[Grouping, Formula]] = {
    "per-task": (_by_task, _mad_consistency),
    "pooled": (_pooled, _mad_consistency),
    "cv": (_by_task, _cv_consistency),
}


def cdc_axis(clean: Mapping[TaskDataset, FloatArray], variant: str = "per-task") -> AxisSeries:
    """CDC of one model from its clean scores per (task, dataset).

    Each group (a task, or "pooled") with at least two datasets and a non-zero mean gives a raw CDC;
    the value is the mean of the per-group values clamped to [0, 1], raw the mean of the raw values.
    Groups that cannot be scored are left out and named in detail["left_out"].
    """
    if variant not in CDC_VARIANTS:
        raise MetricError(f"unknown cdc_variant {variant!r}; valid: {', '.join(sorted(CDC_VARIANTS))}")
    grouping, formula = CDC_VARIANTS[variant]
    raws: dict[str, FloatArray] = {}
    left_out: dict[str, str] = {}
    for name, datasets in sorted(grouping(clean).items()):
        if len(datasets) < 2:
            left_out[name] = f"only {len(datasets)} dataset ({', '.join(sorted(datasets))})"
            continue
        a = np.stack([datasets[d] for d in sorted(datasets)], axis=1)
        if a[0].mean() == 0:
            left_out[name] = "mean score over datasets is 0"
            continue
        raws[name] = formula(a)
    detail: dict[str, object] = {"variant": variant, "left_out": left_out}
    if not raws:
        why = "; ".join(f"{k}: {v}" for k, v in left_out.items()) or "no clean scores"
        return AxisSeries.undefined(f"CDC needs two or more datasets with a non-zero mean ({why})", detail)
    stacked = np.stack(list(raws.values()))
    detail["per_group"] = {k: float(v[0]) for k, v in raws.items()}
    return AxisSeries(np.clip(stacked, 0.0, 1.0).mean(axis=0), stacked.mean(axis=0), None, detail)


def capability_axis(
    clean: Mapping[TaskDataset, FloatArray], expected: Mapping[str, Sequence[str]]
) -> AxisSeries:
    """P = mean over tasks of (mean over the task's datasets of the clean primary score).

    expected maps each task of the run to its datasets; tasks and datasets this model lacks are named in
    detail["missing_tasks"] and detail["missing_datasets"].
    """
    per_task = _by_task(clean)
    missing_tasks = sorted(set(expected) - set(per_task))
    missing_datasets = {
        t: sorted(set(ds) - set(per_task.get(t, {}))) for t, ds in sorted(expected.items()) if t in per_task
    }
    detail: dict[str, object] = {
        "missing_tasks": missing_tasks,
        "missing_datasets": {t: d for t, d in missing_datasets.items() if d},
    }
    if not per_task:
        return AxisSeries.undefined("no clean scores for any task", detail)
    task_means = {t: np.mean(np.stack(list(ds.values())), axis=0) for t, ds in per_task.items()}
    detail["per_task"] = {t: float(v[0]) for t, v in task_means.items()}
    values = np.mean(np.stack(list(task_means.values())), axis=0)
    return AxisSeries(np.clip(values, 0.0, 1.0), values, None, detail)


def retention_ratios(clean: FloatArray, perturbed: FloatArray) -> FloatArray:
    """min(1, perturbed / clean) per row; NaN where the clean score is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.minimum(1.0, perturbed / clean)
    return np.where(clean == 0, np.nan, ratio)


def retention_axis(ratios: Mapping[str, FloatArray], left_out: Mapping[str, str]) -> AxisSeries:
    """RR = mean of the paired retention ratios over (task, dataset, perturbation, severity) cells.

    A cell whose full-sample clean score is 0 (NaN in row 0) is left out and named, like the cells in
    left_out (e.g. no clean cell to pair with). NaN rows of a kept cell are skipped in that resample.
    """
    named = dict(left_out)
    kept = {}
    for label, rows in sorted(ratios.items()):
        if np.isnan(rows[0]):
            named[label] = "clean score is 0"
        else:
            kept[label] = rows
    detail: dict[str, object] = {"cells": len(kept), "left_out": dict(sorted(named.items()))}
    if not kept:
        why = "no perturbed cell with a non-zero clean score to pair with"
        return AxisSeries.undefined(why, detail)
    with warnings.catch_warnings():
        # an all-NaN resample row stays NaN on purpose; numpy's "mean of empty slice" warning is noise
        warnings.simplefilter("ignore", RuntimeWarning)
        values = np.nanmean(np.stack(list(kept.values())), axis=0)
    return AxisSeries(values, values, None, detail)


def weighted_mean_axis(
    name: str, terms: Mapping[str, AxisSeries], weights: Mapping[str, float]
) -> AxisSeries:
    """Weighted mean of the defined terms with weights renormalised over them; undefined terms with a
    positive weight are left out and named (with their reason) in detail["left_out"]."""
    left_out = {
        t: str(terms[t].undefined_reason) for t, w in weights.items() if w > 0 and not terms[t].defined
    }
    used = {t: w for t, w in weights.items() if w > 0 and terms[t].defined}
    detail: dict[str, object] = {"left_out": left_out}
    if not used:
        return AxisSeries.undefined(f"{name}: no defined term ({', '.join(sorted(left_out))})", detail)
    norm = normalised(used)
    detail["weights_used"] = norm
    values = np.zeros_like(np.asarray(terms[next(iter(used))].values))
    for t, w in norm.items():
        values = values + w * np.asarray(terms[t].values)
    return AxisSeries(values, values, None, detail)


def argus_axis(terms: Mapping[str, AxisSeries], weights: Mapping[str, float]) -> AxisSeries:
    """ARGUS = w_P P + w_C CDC + w_R RR + w_E E over the defined terms, weights renormalised."""
    return weighted_mean_axis("ARGUS", terms, weights)


def reliability_axis(cdc_series: AxisSeries, rr_series: AxisSeries) -> AxisSeries:
    """R = mean(CDC, RR); with one of them undefined, the other alone (left-out term named)."""
    return weighted_mean_axis("R", {"CDC": cdc_series, "RR": rr_series}, {"CDC": 0.5, "RR": 0.5})

"""E, the efficiency axis: per task from interleaved timing trials (resampled, so E has an interval), or
from one measured profile per model (the older form, kept for profiles without trials: not resampled)."""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.efficiency.trials import TaskTiming
from argus_eval.scoring.budgets import EfficiencyBudgets
from argus_eval.scoring.types import AxisSeries, AxisValue, FloatArray

# sub-metric -> (profile attribute, budget attribute, higher is better)
SUB_METRICS: dict[str, tuple[str, str, bool]] = {
    "latency": ("latency_ms_p50", "latency_ms", False),
    "memory": ("peak_memory_mb", "memory_mb", False),
    "flops": ("flops_per_sample", "flops_per_sample", False),
    "throughput": ("throughput_per_s", "throughput_per_s", True),
}


def _value(profile: EfficiencyProfile, sub: str) -> float | None:
    v = getattr(profile, SUB_METRICS[sub][0])
    return None if v is None or v <= 0 else float(v)


def _pool_ratios(
    profiles: Mapping[str, EfficiencyProfile],
) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """Each sub-metric against the best model of the run: min/value, or value/max for throughput.

    A sub-metric some profiled model lacks is left out for every model, so all E use the same terms."""
    ratios: dict[str, dict[str, float]] = {m: {} for m in profiles}
    left_out: dict[str, str] = {}
    for sub, (_attr, _budget, higher) in SUB_METRICS.items():
        vals = {m: _value(p, sub) for m, p in profiles.items()}
        lacking = sorted(m for m, v in vals.items() if v is None)
        if lacking:
            left_out[sub] = f"not measured (or not positive) for {', '.join(lacking)}"
            continue
        present = {m: float(v) for m, v in vals.items() if v is not None}
        if not present:
            continue
        best = max(present.values()) if higher else min(present.values())
        for m, v in present.items():
            ratios[m][sub] = v / best if higher else best / v
    return ratios, left_out


def _budget_ratios(
    profiles: Mapping[str, EfficiencyProfile], budgets: EfficiencyBudgets
) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """Each sub-metric against its fixed budget: min(1, budget/value), or min(1, value/budget) for
    throughput. Sub-metrics without a budget are left out; a model lacking a value drops that term."""
    ratios: dict[str, dict[str, float]] = {m: {} for m in profiles}
    left_out: dict[str, str] = {}
    for sub, (_attr, budget_attr, higher) in SUB_METRICS.items():
        budget = getattr(budgets, budget_attr)
        if budget is None:
            left_out[sub] = "no budget configured"
            continue
        for m, p in profiles.items():
            v = _value(p, sub)
            if v is not None:
                ratios[m][sub] = min(1.0, v / budget if higher else budget / v)
    return ratios, left_out


def efficiency_axis(
    profiles: Mapping[str, EfficiencyProfile | None],
    mode: str = "pool",
    budgets: EfficiencyBudgets | None = None,
) -> dict[str, AxisValue]:
    """E per model: geometric mean of the normalised sub-metrics (latency p50, peak memory, FLOPs per
    sample, throughput). Profiles from more than one hardware fingerprint are never mixed: every E is
    then undefined with the fingerprints named. Models without a profile get an undefined E."""
    measured = {m: p for m, p in profiles.items() if p is not None}
    out = {m: AxisValue(None, None, "no efficiency profile", {}) for m in profiles if profiles[m] is None}
    fingerprints = {m: p.fingerprint_id for m, p in measured.items()}
    if len(set(fingerprints.values())) > 1:
        listed = ", ".join(f"{m}={f or '?'}" for m, f in sorted(fingerprints.items()))
        reason = f"efficiency figures come from different hardware fingerprints ({listed}); they never mix"
        out.update({m: AxisValue(None, None, reason, {}) for m in measured})
        return dict(sorted(out.items()))
    ratio_fns = {
        "pool": lambda: _pool_ratios(measured),
        "budget": lambda: _budget_ratios(measured, budgets or EfficiencyBudgets()),
    }
    if mode not in ratio_fns:
        raise ValueError(f"unknown efficiency_mode {mode!r}; valid: {', '.join(sorted(ratio_fns))}")
    ratios, left_out = ratio_fns[mode]()
    for m, subs in ratios.items():
        fid = fingerprints[m]
        detail = {
            "mode": mode,
            "fingerprint": fid,
            "sub_scores": dict(sorted(subs.items())),
            "left_out": left_out,
        }
        if not subs:
            out[m] = AxisValue(None, None, "no efficiency sub-metric could be normalised", detail)
            continue
        from scipy.stats import gmean  # here: a run with no E to score (served models) never loads scipy

        e = float(gmean(list(subs.values())))
        out[m] = AxisValue(e, e, None, detail)
    return dict(sorted(out.items()))


def _round_matrix(units: Mapping[str, TaskTiming], attr: str) -> tuple[list[str], FloatArray]:
    """(models, rounds) matrix of one per-trial figure, NaN where a model's trial of a round is missing."""
    models = sorted(units)
    rounds = sorted({t.round for u in units.values() for t in u.trials})
    col = {r: j for j, r in enumerate(rounds)}
    out = np.full((len(models), len(rounds)), np.nan)
    for i, m in enumerate(models):
        for t in units[m].trials:
            out[i, col[t.round]] = getattr(t, attr)
    return models, out


def _per_round_ratios(
    values: FloatArray, sub: str, mode: str, budgets: EfficiencyBudgets
) -> FloatArray | None:
    """(models, rounds) ratios in [0, 1]: within each round against the round's best model (pool), so
    load that hits a whole round cancels, or against the budget."""
    higher = SUB_METRICS[sub][2]
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN round stays NaN
        if mode == "budget":
            budget = getattr(budgets, SUB_METRICS[sub][1])
            if budget is None:
                return None
            out: FloatArray = np.minimum(1.0, values / budget if higher else budget / values)
            return out
        best = np.nanmax(values, axis=0) if higher else np.nanmin(values, axis=0)
        out = values / best[None, :] if higher else best[None, :] / values
        return out


def _fixed_ratios(
    values: Mapping[str, float], sub: str, mode: str, budgets: EfficiencyBudgets
) -> dict[str, float] | None:
    """Memory and FLOPs do not depend on load: one ratio per model."""
    higher = SUB_METRICS[sub][2]
    if mode == "budget":
        budget = getattr(budgets, SUB_METRICS[sub][1])
        if budget is None:
            return None
        return {m: min(1.0, v / budget if higher else budget / v) for m, v in values.items()}
    best = max(values.values()) if higher else min(values.values())
    return {m: v / best if higher else best / v for m, v in values.items()}


def _round_draws(n_rounds: int, resamples: int, seed: int, task: str) -> NDArray[np.intp]:
    """(1 + resamples, n_rounds) round indices: row 0 every round, then rounds drawn with replacement,
    the same draw for every model of the task (paired, as samples are)."""
    rng = np.random.default_rng([seed, zlib.crc32(f"timing/{task}".encode())])
    first = np.arange(n_rounds)[None, :]
    if not resamples:
        return first
    return np.vstack([first, rng.integers(0, n_rounds, size=(resamples, n_rounds))])


def _task_efficiency(
    units: Mapping[str, TaskTiming],
    task: str,
    resamples: int,
    seed: int,
    mode: str,
    budgets: EfficiencyBudgets,
) -> tuple[dict[str, FloatArray], dict[str, dict[str, float]], dict[str, str]]:
    """E_task rows per model, its sub-scores (row 0) and the sub-metrics left out (with why)."""
    subs: dict[str, list[FloatArray]] = {m: [] for m in units}
    detail: dict[str, dict[str, float]] = {m: {} for m in units}
    left_out: dict[str, str] = {}
    for sub, attr in (("latency", "latency_ms"), ("throughput", "throughput_per_s")):
        models, values = _round_matrix(units, attr)
        ratios = _per_round_ratios(values, sub, mode, budgets)
        if ratios is None:
            left_out[sub] = "no budget configured"
            continue
        draws = _round_draws(values.shape[1], resamples, seed, task)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            rows = np.nanmedian(ratios[:, draws], axis=2)  # (models, 1 + resamples)
        for i, m in enumerate(models):
            subs[m].append(rows[i])
            detail[m][sub] = float(rows[i, 0])
    n = resamples + 1
    for sub, attr in (("memory", "memory_mb"), ("flops", "flops_per_sample")):
        raw = {m: getattr(u, attr) for m, u in units.items()}
        lacking = sorted(m for m, v in raw.items() if v is None or v <= 0)
        if lacking:
            left_out[sub] = f"not measured for {', '.join(lacking)}"
            continue
        fixed = _fixed_ratios({m: float(v) for m, v in raw.items()}, sub, mode, budgets)
        if fixed is None:
            left_out[sub] = "no budget configured"
            continue
        for m, r in fixed.items():
            subs[m].append(np.full(n, r))
            detail[m][sub] = r
    e = {m: np.exp(np.mean(np.log(np.stack(rs)), axis=0)) for m, rs in subs.items() if rs}
    return e, detail, left_out


@dataclass(frozen=True)
class EfficiencyRows:
    """E per model (rows: all timing rounds, then resamples) and E per (model, task), the like-for-like
    parts of the head-to-head comparison."""

    axes: dict[str, AxisSeries]
    per_task: dict[tuple[str, str], FloatArray]


def efficiency_from_timings(
    timings: Mapping[tuple[str, str], TaskTiming],
    models: Sequence[str],
    resamples: int,
    seed: int,
    mode: str = "pool",
    budgets: EfficiencyBudgets | None = None,
    undefined: Mapping[str, str] | None = None,
) -> EfficiencyRows:
    """E like for like: per task, each model's latency and throughput are compared with the other models
    **within each timing round** (the trials of one round run back to back, so load that hits a round
    hits all of them), the median over rounds is its sub-score; memory and FLOPs against the best model
    (pool) or a budget; E_task is the geometric mean of the sub-scores and E the mean of E_task over the
    model's tasks (as P averages tasks). Rows 1.. resample rounds, the same rounds for every model of a
    task, so E carries the timing noise as an interval."""
    if mode not in ("pool", "budget"):
        raise ValueError(f"unknown efficiency_mode {mode!r}; valid: budget, pool")
    budgets = budgets or EfficiencyBudgets()
    why = dict(undefined or {})
    fps = {t.fingerprint_id for t in timings.values()}
    if len(fps) > 1:
        reason = (
            f"timings come from different hardware fingerprints ({', '.join(sorted(fps))}); they never mix"
        )
        return EfficiencyRows({m: AxisSeries.undefined(reason) for m in models}, {})
    per_task: dict[tuple[str, str], FloatArray] = {}
    sub_detail: dict[tuple[str, str], dict[str, float]] = {}
    left_out: dict[str, dict[str, str]] = {}
    for task in sorted({t for _m, t in timings}):
        units = {m: u for (m, t), u in timings.items() if t == task and u.trials}
        e_rows, detail, lost = _task_efficiency(units, task, resamples, seed, mode, budgets)
        if lost:
            left_out[task] = lost
        for m, rows in e_rows.items():
            per_task[(m, task)] = rows
            sub_detail[(m, task)] = detail[m]
    axes: dict[str, AxisSeries] = {}
    for m in models:
        tasks = sorted(t for mm, t in per_task if mm == m)
        info: dict[str, Any] = {
            "mode": mode,
            "basis": "per task, latency and throughput against the best model of each timing round "
            "(median over rounds), memory and FLOPs against the best model; geometric mean",
            "per_task": {t: float(per_task[(m, t)][0]) for t in tasks},
            "sub_scores": {t: sub_detail.get((m, t), {}) for t in tasks},
            "trials": {t: len(timings[(m, t)].trials) for t in tasks},
            "left_out": {t: v for t, v in left_out.items() if t in tasks},
            "fingerprint": next(iter(fps), ""),
        }
        if not tasks:
            info.pop("fingerprint")
            axes[m] = AxisSeries.undefined(why.get(m, "no timing trials for any task"), info)
            continue
        e = np.mean(np.stack([per_task[(m, t)] for t in tasks]), axis=0)
        axes[m] = AxisSeries(e, e, None, info)
    return EfficiencyRows(axes, per_task)

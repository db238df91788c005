"""E, the efficiency axis: per task from interleaved timing trials (resampled, so E has an interval), or
from one measured profile per model (the older form, kept for profiles without trials: not resampled)."""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import gmean

from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.efficiency.trials import TaskTiming, resample_medians
from argus_eval.scoring.options import EfficiencyBudgets
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
        e = float(gmean(list(subs.values())))
        out[m] = AxisValue(e, e, None, detail)
    return dict(sorted(out.items()))


def _unit_rows(timing: TaskTiming, resamples: int, seed: int) -> dict[str, FloatArray | None]:
    """Sub-metric rows of one (model, task): latency and throughput medians over resampled trials;
    memory and FLOPs are not load-dependent and stay constant."""
    rng = np.random.default_rng([seed, zlib.crc32(f"{timing.model}/{timing.task}".encode())])
    n = resamples + 1
    lat = resample_medians(timing.latencies, resamples, rng)
    thr = resample_medians(timing.throughputs, resamples, rng)
    mem, flops = timing.memory_mb, timing.flops_per_sample
    return {
        "latency": lat,
        "throughput": thr,
        "memory": None if mem is None or mem <= 0 else np.full(n, float(mem)),
        "flops": None if flops is None or flops <= 0 else np.full(n, float(flops)),
    }


def _ratio_rows(
    values: Mapping[str, FloatArray], sub: str, mode: str, budgets: EfficiencyBudgets
) -> dict[str, FloatArray] | None:
    higher = SUB_METRICS[sub][2]
    if mode == "budget":
        budget = getattr(budgets, SUB_METRICS[sub][1])
        if budget is None:
            return None
        return {m: np.minimum(1.0, v / budget if higher else budget / v) for m, v in values.items()}
    stacked = np.stack(list(values.values()))
    best = stacked.max(axis=0) if higher else stacked.min(axis=0)
    return {m: v / best if higher else best / v for m, v in values.items()}


@dataclass(frozen=True)
class EfficiencyRows:
    """E per model (rows: full trials, then resamples) and E per (model, task), the like-for-like parts."""

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
    """E like for like: per task, each model's sub-metrics (median latency and throughput over timing
    trials, memory, FLOPs) are normalised against the best model on that task (pool) or against budgets,
    E_task is their geometric mean, and E is the mean of E_task over the model's tasks (as P averages
    tasks). Rows 1.. resample each (model, task)'s trials, so E carries the timing noise as an interval."""
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
    units = {k: _unit_rows(t, resamples, seed) for k, t in sorted(timings.items())}
    per_task: dict[tuple[str, str], FloatArray] = {}
    sub_detail: dict[tuple[str, str], dict[str, float]] = {}
    left_out: dict[str, dict[str, str]] = {}
    for task in sorted({t for _m, t in units}):
        here = {m: units[(m, tt)] for (m, tt) in units if tt == task}
        ratios: dict[str, list[FloatArray]] = {m: [] for m in here}
        for sub in SUB_METRICS:
            lacking = sorted(m for m, u in here.items() if u[sub] is None)
            if lacking:
                left_out.setdefault(task, {})[sub] = f"not measured for {', '.join(lacking)}"
                continue
            r = _ratio_rows({m: u[sub] for m, u in here.items()}, sub, mode, budgets)  # type: ignore[misc]
            if r is None:
                left_out.setdefault(task, {})[sub] = "no budget configured"
                continue
            for m, rows in r.items():
                ratios[m].append(rows)
                sub_detail.setdefault((m, task), {})[sub] = float(rows[0])
        for m, rs in ratios.items():
            if rs:
                per_task[(m, task)] = np.exp(np.mean(np.log(np.stack(rs)), axis=0))
    axes: dict[str, AxisSeries] = {}
    for m in models:
        tasks = sorted(t for mm, t in per_task if mm == m)
        detail: dict[str, Any] = {
            "mode": mode,
            "per_task": {t: float(per_task[(m, t)][0]) for t in tasks},
            "sub_scores": {t: sub_detail.get((m, t), {}) for t in tasks},
            "trials": {t: len(timings[(m, t)].trials) for t in tasks},
            "left_out": {t: v for t, v in left_out.items() if t in tasks},
            "fingerprint": next(iter(fps), ""),
        }
        if not tasks:
            detail.pop("fingerprint")
            axes[m] = AxisSeries.undefined(why.get(m, "no timing trials for any task"), detail)
            continue
        e = np.mean(np.stack([per_task[(m, t)] for t in tasks]), axis=0)
        axes[m] = AxisSeries(e, e, None, detail)
    return EfficiencyRows(axes, per_task)

"""E, the efficiency axis, from measured profiles (not resampled: the bootstrap keeps E fixed)."""

from __future__ import annotations

from collections.abc import Mapping

from scipy.stats import gmean

from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.scoring.options import EfficiencyBudgets
from argus_eval.scoring.types import AxisValue

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

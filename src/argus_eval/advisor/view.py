"""A typed, validated view of the parts of results.json the advisor reads. Every ResultsError names the
field (e.g. "models.clip.RR"), so a broken or foreign file is reported where it breaks."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from argus_eval.advisor.constraints import AXIS_ORDER
from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.errors import ResultsError

SCORE_AXES = (*AXIS_ORDER, "ARGUS")

Interval = tuple[float, float] | None
Pairwise = dict[str, dict[str, dict[str, float | None]]]


@dataclass(frozen=True)
class ModelView:
    """One model's axes (None where undefined), why undefined, intervals, P per task and efficiency."""

    name: str
    axes: dict[str, float | None]
    undefined: dict[str, str]
    intervals: dict[str, Interval]
    per_task: dict[str, float] | None
    efficiency: EfficiencyProfile | None


@dataclass(frozen=True)
class RunView:
    """The run's models, its own ARGUS weights, and bootstrap pairwise shares (None without a bootstrap)."""

    models: dict[str, ModelView]
    weights: dict[str, float]
    pairwise: Pairwise | None
    resamples: int | None
    # "A above B" needs at least this share of resamples (the run's scoring.claim_confidence)
    claim_confidence: float = 0.95


def _obj(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ResultsError(f"results.json: field {field!r} must be an object, got {type(value).__name__}")
    return value


def _number(value: Any, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ResultsError(f"results.json: field {field!r} must be a number or null, got {value!r}")
    return float(value)


def _interval(value: Any, field: str) -> Interval:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ResultsError(f"results.json: field {field!r} must be [low, high] or null, got {value!r}")
    lo, hi = _number(value[0], field), _number(value[1], field)
    return None if lo is None or hi is None else (lo, hi)


def _per_task(detail: Any, field: str) -> dict[str, float] | None:
    """detail.P.per_task when the file has it (None otherwise: per-task P is not available)."""
    if not isinstance(detail, dict) or not isinstance(detail.get("P"), dict):
        return None
    raw = detail["P"].get("per_task")
    if raw is None:
        return None
    table = _obj(raw, f"{field}.detail.P.per_task")
    out = {str(t): _number(v, f"{field}.detail.P.per_task.{t}") for t, v in table.items()}
    return {t: v for t, v in out.items() if v is not None}


def _efficiency(raw: Any, field: str) -> EfficiencyProfile | None:
    if raw is None:
        return None
    try:
        return EfficiencyProfile.from_json(_obj(raw, field))
    except ResultsError as e:
        raise ResultsError(f"results.json: field {field!r}: {e}") from None
    except (TypeError, ValueError) as e:
        raise ResultsError(f"results.json: field {field!r} has a non-numeric figure ({e})") from None


def _model(name: str, raw: Any, efficiency: Mapping[str, Any]) -> ModelView:
    field = f"models.{name}"
    m = _obj(raw, field)
    missing = [a for a in SCORE_AXES if a not in m]
    if missing:
        raise ResultsError(f"results.json: field {field!r} is missing {', '.join(missing)}")
    axes = {a: _number(m[a], f"{field}.{a}") for a in SCORE_AXES}
    undefined = {str(k): str(v) for k, v in _obj(m.get("undefined") or {}, f"{field}.undefined").items()}
    ints = _obj(m.get("intervals") or {}, f"{field}.intervals")
    intervals = {a: _interval(ints.get(a), f"{field}.intervals.{a}") for a in SCORE_AXES}
    # The top-level efficiency block is the run's record; the copy inside the model card is a fallback.
    if name in efficiency:
        profile = _efficiency(efficiency[name], f"efficiency.{name}")
    else:
        profile = _efficiency(m.get("efficiency"), f"{field}.efficiency")
    return ModelView(name, axes, undefined, intervals, _per_task(m.get("detail"), field), profile)


def _cells_per_task(results: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """model -> task -> mean clean score over datasets, from scorecard_cells (the fallback for P per task)."""
    cells = results.get("scorecard_cells")
    if not isinstance(cells, list):
        return {}
    pooled: dict[str, dict[str, list[float]]] = {}
    for i, c in enumerate(cells):
        if not isinstance(c, dict) or c.get("condition") != "clean":
            continue
        score = _number(c.get("score"), f"scorecard_cells[{i}].score")
        if score is not None:
            pooled.setdefault(str(c.get("model")), {}).setdefault(str(c.get("task")), []).append(score)
    return {m: {t: sum(v) / len(v) for t, v in ts.items()} for m, ts in pooled.items()}


def _weights(results: Mapping[str, Any]) -> dict[str, float]:
    opts = _obj(results.get("scoring_options"), "scoring_options")
    w = _obj(opts.get("weights"), "scoring_options.weights")
    out: dict[str, float] = {}
    for a in AXIS_ORDER:
        v = _number(w.get(a), f"scoring_options.weights.{a}")
        if v is None:
            raise ResultsError(f"results.json: field 'scoring_options.weights.{a}' is missing")
        out[a] = v
    return out


def _pairwise(results: Mapping[str, Any]) -> Pairwise | None:
    rankings = results.get("rankings")
    if rankings is None:
        return None
    raw = _obj(rankings, "rankings").get("pairwise")
    if raw is None:
        return None
    out: Pairwise = {}
    for axis, table in _obj(raw, "rankings.pairwise").items():
        out[axis] = {}
        for a, row in _obj(table, f"rankings.pairwise.{axis}").items():
            out[axis][a] = {
                b: _number(v, f"rankings.pairwise.{axis}.{a}.{b}")
                for b, v in _obj(row, f"rankings.pairwise.{axis}.{a}").items()
            }
    return out


def read_view(results: Mapping[str, Any]) -> RunView:
    """Validate and type the advisor's fields of a results.json dict; ResultsError names a bad field."""
    models_raw = _obj(results.get("models"), "models")
    if not models_raw:
        raise ResultsError("results.json: field 'models' is empty; there is nothing to recommend")
    eff_raw = results.get("efficiency")
    efficiency = {} if eff_raw is None else _obj(eff_raw, "efficiency")
    fallback = _cells_per_task(results)
    models = {}
    for name, raw in sorted(models_raw.items()):
        view = _model(str(name), raw, efficiency)
        if view.per_task is None and name in fallback:
            view = ModelView(
                view.name, view.axes, view.undefined, view.intervals, fallback[name], view.efficiency
            )
        models[str(name)] = view
    boot = results.get("bootstrap")
    resamples = None
    if isinstance(boot, dict) and boot.get("resamples") is not None:
        n = _number(boot.get("resamples"), "bootstrap.resamples")
        resamples = None if n is None else int(n)
    comp = results.get("comparison")
    level = (
        _number(comp.get("claim_confidence"), "comparison.claim_confidence")
        if isinstance(comp, dict)
        else None
    )
    return RunView(models, _weights(results), _pairwise(results), resamples, 0.95 if level is None else level)

"""The blocks of the scorecard's part of results.json (the Results model's ScorecardPart), made straight
from scoring's rows: a model's row from its axis and retention rows, a cell from its score rows, and the
comparison, rankings and gap from the head-to-head. NaN becomes null and numpy numbers plain ones on the
way; scoring/scorecard.py assembles them into the one scorecard type."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.results_model.efficiency import EfficiencyBlock, Projection
from argus_eval.results_model.scorecard import (
    AxisDetail,
    AxisInfo,
    BelowChance,
    Claim,
    CommonSamples,
    ComparisonBlock,
    ExtraScore,
    Gap,
    Incomplete,
    ModelRow,
    NotComparable,
    RankEntry,
    Rankings,
    Retention,
    ScorecardCell,
    ShortCell,
    Tie,
    Withheld,
)
from argus_eval.scoring.axis_registry import axis_names, axis_specs
from argus_eval.scoring.engine import ModelRows
from argus_eval.scoring.headtohead import HeadToHead
from argus_eval.scoring.statistics import percentile_interval
from argus_eval.scoring.types import AxisValue, CellKey, FloatArray


def clean(obj: Any) -> Any:
    """numpy scalars -> Python numbers, NaN/inf -> None, tuples -> lists; dict order is kept."""
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(float(obj)) else None
    return obj


def efficiency_block(profile: EfficiencyProfile, projections: list[Projection] | None) -> EfficiencyBlock:
    """A measured profile with its device projections (None: the profile is written without them)."""
    extra: dict[str, Any] = {} if projections is None else {"projections": projections}
    return EfficiencyBlock(**clean(profile.to_json()), **extra)


def _key_fields(key: CellKey) -> dict[str, Any]:
    out: dict[str, Any] = {"model": key.model, "task": key.task, "dataset": key.dataset}
    out["condition"] = key.condition
    if not key.is_clean:
        out["perturbation"] = key.ref.perturbation
        out["severity"] = key.ref.severity
    return out


def _point(rows: FloatArray | None) -> float | None:
    if rows is None or np.isnan(rows[0]):
        return None
    return float(rows[0])


@dataclass(frozen=True)
class CellSizes:
    """Per cell: samples its score is on, samples it scored that another condition did not, its chance."""

    n_samples: int
    n_dropped: int
    chance: float | None


def cell_block(
    key: CellKey,
    point: FloatArray,
    boot: FloatArray | None,
    size: CellSizes,
    confidence: float,
    extras: Mapping[str, ExtraScore] | None,
) -> ScorecardCell:
    """A cell's primary score (row 0 of its point rows), its interval from the resample rows."""
    more: dict[str, Any] = {} if not extras else {"extras": dict(sorted(extras.items()))}
    interval = None if boot is None else percentile_interval(boot, confidence)
    return ScorecardCell(
        **_key_fields(key),
        score=clean(float(point[0])),
        n_samples=size.n_samples,
        n_dropped=size.n_dropped,
        interval=clean(interval),
        chance=clean(size.chance),
        **more,
    )


def below_chance(key: CellKey, point: FloatArray, chance: float | None) -> BelowChance | None:
    """The block of a clean cell at or below its chance level (None for any other cell)."""
    score = float(point[0])
    if not key.is_clean or chance is None or score > chance + 1e-12:
        return None
    return BelowChance(**_key_fields(key), score=clean(score), chance=clean(chance))


def _row(
    axes: Mapping[str, AxisValue],
    intervals: Mapping[str, Any],
    retention: list[Retention],
    curves: Mapping[str, Mapping[int, float | None]],
    efficiency: EfficiencyBlock | None,
) -> ModelRow:
    names = axis_names()
    return ModelRow(
        **{axis: clean(axes[axis].value) for axis in names},
        raw={axis: clean(axes[axis].raw) for axis in names},
        undefined={a: v.undefined_reason for a, v in axes.items() if v.undefined_reason is not None},
        detail={axis: AxisDetail(**clean(axes[axis].detail)) for axis in names},
        intervals=clean(intervals),
        retention=retention,
        severity_curves={n: {str(s): clean(v) for s, v in c.items()} for n, c in curves.items()},
        efficiency=efficiency,
    )


def model_row(
    point: ModelRows, boot: ModelRows | None, confidence: float, efficiency: EfficiencyBlock | None
) -> ModelRow:
    """A model's row: each axis's value (row 0 of the point rows), its interval from the resample rows,
    its retention table and severity curves."""

    def interval(r: FloatArray | None) -> tuple[float, float] | None:
        return percentile_interval(r, confidence)

    retention = [
        Retention(
            **{k: v for k, v in _key_fields(r.key).items() if k != "model"},
            clean=clean(float(r.clean[0])),
            perturbed=clean(float(r.perturbed[0])),
            retention=clean(_point(r.ratio)),
            flip_rate=clean(_point(r.flip)),
            intervals=clean(
                {} if boot is None else {"retention": interval(b.ratio), "flip_rate": interval(b.flip)}
            ),
        )
        for r, b in zip(point.retention, boot.retention if boot is not None else point.retention, strict=True)
    ]
    curves = {name: {s: _point(v) for s, v in c.items()} for name, c in point.curves.items()}
    intervals = {} if boot is None else {a: interval(boot.axes[a].values) for a in axis_names()}
    axes = {a: point.axes[a].point() for a in axis_names()}
    return _row(axes, intervals, retention, curves, efficiency)


def no_cell_row(reason: str, bootstrapped: bool, efficiency: EfficiencyBlock | None) -> ModelRow:
    """A model with no scored cell: every axis undefined, for the one reason it has no figure."""
    names = axis_names()
    axes = {a: AxisValue(None, None, reason) for a in names}
    return _row(axes, dict.fromkeys(names) if bootstrapped else {}, [], {}, efficiency)


def _shift(h: HeadToHead) -> dict[str, int | None]:
    cap, ovr = h.ranks["capability"], h.ranks["overall"]
    return {m: (c - o) if (c := cap[m]) is not None and (o := ovr[m]) is not None else None for m in cap}


def _incomplete(entry: dict[str, Any]) -> Incomplete:
    cells = [ShortCell(**_key_fields(c["key"]), scored=c["scored"], samples=c["samples"])
             for c in entry["cells"]]  # fmt: skip
    return Incomplete(**clean({k: v for k, v in entry.items() if k != "cells"}), cells=cells)


def _common(pairs: Mapping[tuple[str, str], Mapping[tuple[str, str], int]]) -> list[CommonSamples]:
    return [
        CommonSamples(
            models=pair, n=sum(cells.values()), cells={f"{t}/{d}": n for (t, d), n in sorted(cells.items())}
        )
        for pair, cells in sorted(pairs.items())
    ]


def comparison_block(
    h: HeadToHead, claim_min_scored: float, common: Mapping[tuple[str, str], Mapping[tuple[str, str], int]]
) -> ComparisonBlock:
    """The head-to-head comparison's block; common: the samples each pair is compared on."""
    return ComparisonBlock(
        method="head-to-head win rate over shared cells, on the samples both models scored "
        "(see docs/comparisons.md)",
        claim_confidence=h.confidence,
        claims=[Claim(**clean(c)) for c in h.claims],
        ties=[Tie(**clean(t)) for t in h.ties],
        not_comparable=[NotComparable(**clean(nc)) for nc in h.not_comparable],
        head_to_head=clean(h.head_to_head),
        win_rate=clean(h.win_rate),
        shared_parts=clean(h.shared),
        claim_min_scored=claim_min_scored,
        incomplete=[_incomplete(i) for i in h.incomplete],
        common_samples=_common(common),
        withheld=[Withheld(**clean(w)) for w in h.withheld],
    )


def _ranking(h: HeadToHead, rows: Mapping[str, ModelRow], which: str, axis: str) -> list[RankEntry]:
    ranks = h.ranks[which]
    wins = h.win_rate[which]
    order = sorted(ranks, key=lambda m: (ranks[m] is None, ranks[m] or 0, -(wins[m] or 0.0), m))
    return [
        RankEntry(model=m, rank=ranks[m], win_rate=clean(wins[m]), value=rows[m].value(axis)) for m in order
    ]


def rankings(h: HeadToHead, rows: Mapping[str, ModelRow], bootstrapped: bool) -> Rankings:
    """Capability and overall ranks by supported head-to-head wins, and the pairwise shares."""
    return Rankings(
        basis="rank = 1 + number of models supported above it (P(beats) >= claim_confidence), "
        "head to head on shared cells; ties share a rank",
        capability=_ranking(h, rows, "capability", "P"),
        overall=_ranking(h, rows, "overall", "ARGUS"),
        pairwise=clean(h.pairwise) if bootstrapped else None,
    )


def gap(h: HeadToHead) -> Gap:
    """The capability-reliability gap: its sentence, Kendall's tau and the rank shifts."""
    return Gap(
        sentence=h.sentence,
        kendall_tau=clean(h.kendall_tau),
        kendall_tau_interval=clean(h.kendall_tau_interval),
        rank_shift=_shift(h),
    )


def axis_blocks() -> list[AxisInfo]:
    """The declared axes, in display order."""
    return [AxisInfo(**spec.to_json()) for spec in axis_specs()]

"""The scorecard as its part of results.json (the Results model's ScorecardPart): axes, model rows,
cells, rankings, the gap, the comparison and the bootstrap. NaN becomes null and numpy numbers plain
ones on the way."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.results_model.efficiency import EfficiencyBlock, Projection
from argus_eval.results_model.scorecard import (
    AxisDetail,
    AxisInfo,
    BelowChance,
    BootstrapBlock,
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
    ScorecardPart,
    ScoringOptionsEcho,
    ShortCell,
    Tie,
    Withheld,
)
from argus_eval.scoring.axis_registry import axis_names, axis_specs
from argus_eval.scoring.headtohead import HeadToHead
from argus_eval.scoring.scorecard import CellScore, ModelCard, Scorecard
from argus_eval.scoring.types import CellKey


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


def _cell(c: CellScore, extras: Mapping[str, ExtraScore] | None) -> ScorecardCell:
    more: dict[str, Any] = {} if not extras else {"extras": dict(sorted(extras.items()))}
    return ScorecardCell(
        **_key_fields(c.key),
        score=clean(c.score),
        n_samples=c.n_samples,
        n_dropped=c.n_dropped,
        interval=clean(c.interval),
        chance=clean(c.chance),
        **more,
    )


def _row(card: ModelCard, efficiency: EfficiencyBlock | None) -> ModelRow:
    names = axis_names()
    values = {axis: clean(card.axes[axis].value) for axis in names}
    retention = [
        Retention(
            **{k: v for k, v in _key_fields(r.key).items() if k != "model"},
            clean=clean(r.clean),
            perturbed=clean(r.perturbed),
            retention=clean(r.retention),
            flip_rate=clean(r.flip_rate),
            intervals=clean(r.intervals),
        )
        for r in card.retention
    ]
    return ModelRow(
        **values,
        raw={axis: clean(card.axes[axis].raw) for axis in names},
        undefined={a: v.undefined_reason for a, v in card.axes.items() if v.undefined_reason is not None},
        detail={axis: AxisDetail(**clean(card.axes[axis].detail)) for axis in names},
        intervals=clean(card.intervals),
        retention=retention,
        severity_curves={
            n: {str(s): clean(v) for s, v in c.items()} for n, c in card.severity_curves.items()
        },
        efficiency=efficiency,
    )


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


def _comparison(sc: Scorecard) -> ComparisonBlock:
    h = sc.comparison
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
        claim_min_scored=sc.options.claim_min_scored,
        incomplete=[_incomplete(i) for i in h.incomplete],
        common_samples=_common(sc.common_samples),
        withheld=[Withheld(**clean(w)) for w in h.withheld],
    )


def _ranking(sc: Scorecard, which: str, card_axis: str) -> list[RankEntry]:
    ranks = sc.comparison.ranks[which]
    wins = sc.comparison.win_rate[which]
    order = sorted(ranks, key=lambda m: (ranks[m] is None, ranks[m] or 0, -(wins[m] or 0.0), m))
    return [
        RankEntry(
            model=m, rank=ranks[m], win_rate=clean(wins[m]), value=clean(sc.models[m].axes[card_axis].value)
        )
        for m in order
    ]


def scorecard_blocks(
    sc: Scorecard,
    projections: Mapping[str, list[Projection]] | None = None,
    extras: Mapping[CellKey, Mapping[str, ExtraScore]] | None = None,
) -> ScorecardPart:
    """The scorecard's part of results.json. projections: device estimates per model, carried with its
    efficiency profile; extras: a cell's further official scores beside its primary."""
    proj = projections or {}
    more = extras or {}
    h = sc.comparison
    rows = {
        name: _row(
            card, None if card.efficiency is None else efficiency_block(card.efficiency, proj.get(name))
        )
        for name, card in sc.models.items()
    }
    return ScorecardPart(
        axes=[AxisInfo(**spec.to_json()) for spec in axis_specs()],
        models=rows,
        rankings=Rankings(
            basis="rank = 1 + number of models supported above it (P(beats) >= claim_confidence), "
            "head to head on shared cells; ties share a rank",
            capability=_ranking(sc, "capability", "P"),
            overall=_ranking(sc, "overall", "ARGUS"),
            pairwise=None if sc.bootstrap is None else clean(sc.bootstrap.pairwise),
        ),
        gap=Gap(
            sentence=h.sentence,
            kendall_tau=clean(h.kendall_tau),
            kendall_tau_interval=clean(h.kendall_tau_interval),
            rank_shift=_shift(h),
        ),
        comparison=_comparison(sc),
        below_chance=[
            BelowChance(**_key_fields(c.key), score=clean(c.score), chance=clean(c.chance))
            for c in sc.cells
            if c.key.is_clean and c.chance is not None and c.score <= c.chance + 1e-12
        ],
        scorecard_cells=[_cell(c, more.get(c.key)) for c in sc.cells],
        bootstrap=None
        if sc.bootstrap is None
        else BootstrapBlock(
            resamples=sc.bootstrap.resamples,
            seed=sc.bootstrap.seed,
            confidence=sc.bootstrap.confidence,
            notes=list(sc.bootstrap.notes),
        ),
        scoring_options=ScoringOptionsEcho(**sc.options.model_dump(mode="json")),
    )

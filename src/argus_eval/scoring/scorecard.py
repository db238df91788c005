"""The ARGUS scorecard: per-cell scores, P, CDC, RR, E, ARGUS and R per model, rankings, the
capability-reliability gap, and (with the bootstrap) percentile intervals and pairwise rank shares.

There is one scorecard type, from scoring to results.json: the Results model's ScorecardPart
(results_model/scorecard.py), built here straight from the rows (scoring/results_blocks.py makes its
blocks), validated as it is built and written as it is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.efficiency.trials import TaskTiming
from argus_eval.results_model.efficiency import Projection
from argus_eval.results_model.scorecard import BootstrapBlock, ExtraScore, ScorecardPart, ScoringOptionsEcho
from argus_eval.scoring.axes import efficiency_axis
from argus_eval.scoring.completeness import Coverage, incomplete_gate
from argus_eval.scoring.efficiency_axis import efficiency_from_timings
from argus_eval.scoring.engine import ModelRows, at_or_below_chance, expected_datasets, model_rows
from argus_eval.scoring.format_gate import FormatGate, format_gate
from argus_eval.scoring.gates import INCOMPLETE, WITHHELD
from argus_eval.scoring.headtohead import HeadToHead, head_to_head
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.paired import Draws, Group, align, group_rows
from argus_eval.scoring.pairs import PairRows
from argus_eval.scoring.results_blocks import (
    CellSizes,
    axis_blocks,
    below_chance,
    cell_block,
    comparison_block,
    efficiency_block,
    gap,
    model_row,
    no_cell_row,
    rankings,
)
from argus_eval.scoring.types import AxisSeries, AxisValue, CellData, CellKey, FloatArray
from argus_eval.scoring.view import CellFacts

Interval = tuple[float, float] | None

BOOTSTRAP_NOTES = (
    "paired: one multinomial resample per (task, dataset) of the sample ids a model scored in all its "
    "conditions there, shared by those conditions; the same ids give the same draw, so models that "
    "scored the same samples are resampled identically",
    "a model's own figures use only its own scored samples; a head-to-head comparison restricts both "
    "models to the samples both scored (comparison.common_samples) and resamples those",
    "every cell score, axis, ARGUS and R is recomputed from each resample; corpus-level statistics "
    "inside a cell's finish (e.g. CIDEr document frequencies) are those its task provides",
    "efficiency (E) from timing trials: each (model, task)'s trials are resampled with replacement in every "
    "row (median latency and throughput), so E and ARGUS carry the timing noise; memory and FLOPs are fixed",
    "percentile intervals skip resamples in which a term is degenerate (e.g. a clean score of 0)",
)


@dataclass(frozen=True)
class _Out:
    """What results.json carries beside the scores: device projections per model, a cell's extra scores."""

    projections: Mapping[str, list[Projection]]
    extras: Mapping[CellKey, Mapping[str, ExtraScore]]


@dataclass(frozen=True)
class _Rows:
    scores: dict[CellKey, FloatArray]
    models: dict[str, ModelRows]
    e_tasks: dict[tuple[str, str], FloatArray]
    floor: dict[CellKey, float]  # clean cells at or below chance (decided by row 0)
    draws: Draws  # the resample counts of these rows, by (task, dataset, ids)
    facts: CellFacts  # the cells' chance levels and answer-format rates


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
    facts: CellFacts,
) -> _Rows:
    """Cell score rows and every model's axis rows for the full sample plus `resamples` resamples."""
    scores: dict[CellKey, FloatArray] = {}
    flips: dict[CellKey, FloatArray] = {}
    draws = Draws(resamples, options.seed)
    for g in groups:
        cell_rows, flip_rows = group_rows(g, draws(g))
        scores.update(cell_rows)
        flips.update(flip_rows)
    expected = expected_datasets(list(scores))
    floor = at_or_below_chance(scores, facts.chance)
    e_values, e_tasks = eff.rows(models, options, resamples)
    left = {
        k: "shares no scored sample with the model's other cells there" for g in groups for k in g.left_out
    }
    rows = {
        m: model_rows(
            m, scores, flips, e_values[m], options, expected, floor, 1 + resamples, left, facts, e_tasks
        )
        for m in models
    }
    return _Rows(scores, rows, e_tasks, floor, draws, facts)


def _comparison(
    groups: list[Group],
    rows: _Rows,
    models: list[str],
    options: ScoringOptions,
    coverage: Coverage,
    form: FormatGate,
) -> tuple[HeadToHead, dict[tuple[str, str], dict[tuple[str, str], int]]]:
    """Every pair head to head on the samples both scored; claims withheld where a pair is incomplete
    or shares a clean cell whose answers mostly lack the asked-for form."""
    retention = {r.key: r.ratio for m in models for r in rows.models[m].retention}
    pairs = PairRows(groups, rows.scores, retention, rows.floor, rows.e_tasks, rows.draws, rows.facts)
    gates = {
        INCOMPLETE: incomplete_gate(coverage, options.claim_min_scored),
        WITHHELD: form.gate(models, pairs),
    }
    h = head_to_head(
        models,
        pairs,
        options.weights.as_dict(),
        options.cdc_variant,
        options.claim_confidence,
        options.confidence,
        gates,
        pairs.common_samples,
    )
    common = {(a, b): pairs.common_samples(a, b) for i, a in enumerate(models) for b in models[i + 1 :]}
    return h, {k: v for k, v in common.items() if v}


def _why_no_cell(model: str, coverage: Coverage) -> str:
    if model in coverage.unavailable:
        return f"no cell ran: {coverage.unavailable[model]}"
    asked = sum(n for k, n in coverage.planned.items() if k.model == model)
    return f"no sample scored: all {asked} of its samples failed"


def _build(
    cells: Sequence[CellData],
    eff: _Efficiency,
    options: ScoringOptions,
    resamples: int,
    coverage: Coverage,
    out: _Out,
) -> ScorecardPart:
    groups = align(cells)
    sizes = {a.cell.key: (len(g.ids), a.dropped) for g in groups for a in g.cells}
    facts = CellFacts({c.key: c.chance for c in cells}, {c.key: c.format_rate for c in cells})
    scored_models = {k.model for k in sizes}
    models = sorted(scored_models | coverage.models())
    # The point values come from a run without resamples so they do not depend on the resample count
    # (not even in the last bit); the resample run repeats row 0 and adds the resamples.
    point = _rows(groups, eff, models, options, 0, facts)
    boot = _rows(groups, eff, models, options, resamples, facts) if resamples else None
    rows = {}
    for m in models:
        profile = eff.profiles.get(m)
        block = None if profile is None else efficiency_block(profile, out.projections.get(m))
        if m not in scored_models:
            rows[m] = no_cell_row(_why_no_cell(m, coverage), boot is not None, block)
        else:
            rows[m] = model_row(
                point.models[m], None if boot is None else boot.models[m], options.confidence, block
            )
    form = format_gate(facts.formats, options.min_format_rate)
    h, common = _comparison(groups, boot if boot is not None else point, models, options, coverage, form)
    keys = sorted(point.scores)
    low = [below_chance(k, point.scores[k], facts.chance.get(k)) for k in keys]
    return ScorecardPart(
        axes=axis_blocks(),
        models=rows,
        rankings=rankings(h, rows, boot is not None),
        gap=gap(h),
        comparison=comparison_block(h, options.claim_min_scored, common),
        below_chance=[b for b in low if b is not None],
        scorecard_cells=[
            cell_block(
                k,
                point.scores[k],
                None if boot is None else boot.scores[k],
                CellSizes(sizes[k][0], sizes[k][1], facts.chance.get(k)),
                options.confidence,
                out.extras.get(k),
            )
            for k in keys
        ],
        bootstrap=None
        if boot is None
        else BootstrapBlock(
            resamples=resamples, seed=options.seed, confidence=options.confidence, notes=list(BOOTSTRAP_NOTES)
        ),
        scoring_options=ScoringOptionsEcho(**options.model_dump(mode="json")),
    )


def _coverage(
    cells: Sequence[CellData], planned: Mapping[CellKey, int] | None, unavailable: Mapping[str, str] | None
) -> Coverage:
    """What each cell asked (planned; default: what it scored, i.e. complete) and scored."""
    scored = {c.key: len(c.sample_ids) for c in cells}
    asked = dict(scored) if planned is None else {**scored, **planned}
    return Coverage(asked, scored, dict(unavailable or {}))


def compute_scorecard(
    cells: Sequence[CellData],
    efficiency: Mapping[str, EfficiencyProfile | None],
    options: ScoringOptions,
    timings: Mapping[tuple[str, str], TaskTiming] | None = None,
    timing_undefined: Mapping[str, str] | None = None,
    planned: Mapping[CellKey, int] | None = None,
    unavailable: Mapping[str, str] | None = None,
    *,
    projections: Mapping[str, list[Projection]] | None = None,
    extras: Mapping[CellKey, Mapping[str, ExtraScore]] | None = None,
) -> ScorecardPart:
    """Point values of every cell metric and axis, rankings and the gap (no intervals, no claims)."""
    eff = _Efficiency(efficiency, timings, timing_undefined or {})
    out = _Out(projections or {}, extras or {})
    return _build(cells, eff, options, 0, _coverage(cells, planned, unavailable), out)


def bootstrap_scorecard(
    cells: Sequence[CellData],
    efficiency: Mapping[str, EfficiencyProfile | None],
    options: ScoringOptions,
    timings: Mapping[tuple[str, str], TaskTiming] | None = None,
    timing_undefined: Mapping[str, str] | None = None,
    planned: Mapping[CellKey, int] | None = None,
    unavailable: Mapping[str, str] | None = None,
    *,
    projections: Mapping[str, list[Projection]] | None = None,
    extras: Mapping[CellKey, Mapping[str, ExtraScore]] | None = None,
) -> ScorecardPart:
    """compute_scorecard plus options.resamples paired resamples: percentile intervals for every cell
    score, retention, flip rate, axis and ARGUS, and the head-to-head verdicts P(A beats B) on capability
    and overall. Point values are identical to compute_scorecard's. With timings, E is computed per
    task from the timing trials and resampled with them; with per-model profiles only, E is constant.

    planned: samples each cell of the plan asked, cells no sample of which was scored included (the
    completeness of a pair's shared cells decides whether a claim can be made); unavailable: models
    that ran no cell and why (e.g. could not load). Both default to "every cell complete".
    projections: device estimates per model, carried with its efficiency profile; extras: a cell's
    further official scores beside its primary (scoring/extras.py). The result is the scorecard's part
    of results.json as it is written."""
    eff = _Efficiency(efficiency, timings, timing_undefined or {})
    out = _Out(projections or {}, extras or {})
    return _build(cells, eff, options, options.resamples, _coverage(cells, planned, unavailable), out)

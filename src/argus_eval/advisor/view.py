"""What the advisor reads of a run, taken from the typed Results (already validated when it was loaded):
each model's axes, reasons, intervals, P per task and efficiency profile, the run's ARGUS weights and
its bootstrap pairwise shares."""

from __future__ import annotations

from dataclasses import dataclass

from argus_eval.advisor.constraints import AXIS_ORDER
from argus_eval.errors import ResultsError
from argus_eval.results_model import Results
from argus_eval.results_model.efficiency import EfficiencyBlock
from argus_eval.results_model.scorecard import ModelRow, Rankings

BASE_AXES = (*AXIS_ORDER, "ARGUS")  # every run has these; a run's further ARGUS terms come from its file

Interval = tuple[float, float] | None


@dataclass(frozen=True)
class ModelView:
    """One model as the advisor reads it: its scorecard row, P per task (None when the run has none)
    and its efficiency profile."""

    name: str
    row: ModelRow
    per_task: dict[str, float] | None
    efficiency: EfficiencyBlock | None

    @property
    def axes(self) -> dict[str, float | None]:
        """Every axis of the model's row, as results.json lists them (None where undefined)."""
        return self.row.axis_values()


@dataclass(frozen=True)
class RunView:
    """The run's models, its own ARGUS weights, its rankings (bootstrap pairwise shares) and claim level."""

    models: dict[str, ModelView]
    weights: dict[str, float]  # the run's ARGUS terms (scoring_options.weights), in the file's order
    axes: tuple[str, ...]  # the run's declared axes (results.axes)
    rankings: Rankings
    resamples: int | None
    # "A above B" needs at least this share of resamples (the run's scoring.claim_confidence)
    claim_confidence: float = 0.95


def _cells_per_task(results: Results) -> dict[str, dict[str, float]]:
    """model -> task -> mean clean score over datasets, from scorecard_cells (the fallback for P per task)."""
    pooled: dict[str, dict[str, list[float]]] = {}
    for c in results.scorecard_cells:
        if c.is_clean and c.score is not None:
            pooled.setdefault(c.model, {}).setdefault(c.task, []).append(c.score)
    return {m: {t: sum(v) / len(v) for t, v in ts.items()} for m, ts in pooled.items()}


def _weights(results: Results) -> dict[str, float]:
    w = results.scoring_options.weights
    missing = [a for a in AXIS_ORDER if a not in w]
    if missing:
        raise ResultsError(
            f"results.json: scoring_options.weights.{missing[0]}: Field required (an ARGUS weight)"
        )
    return dict(w)


def read_view(results: Results) -> RunView:
    """The advisor's view of a run; ResultsError when it has no model or lacks an axis the advisor needs."""
    if not results.models:
        raise ResultsError("results.json: models is empty; there is nothing to recommend")
    fallback = _cells_per_task(results)
    w = _weights(results)
    models = {}
    for name, row in sorted(results.models.items()):
        missing = [a for a in (*BASE_AXES, *w) if a not in row.axis_values()]
        if missing:
            raise ResultsError(
                f"results.json: models.{name}.{missing[0]}: Field required (the advisor needs it)"
            )
        per_task = row.per_task("P")
        table = (
            {t: v for t, v in per_task.items() if v is not None}
            if per_task is not None
            else fallback.get(name)
        )
        models[name] = ModelView(name, row, table, results.profile(name))
    boot = results.bootstrap
    return RunView(
        models,
        w,
        results.axis_names,
        results.rankings,
        None if boot is None else boot.resamples,
        results.comparison.claim_confidence,
    )

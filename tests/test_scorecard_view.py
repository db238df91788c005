"""The scorecard view an axis and a head-to-head part read (scoring/view.py): cells by key with their
condition's role and severity, chance levels, answer-format rates, controls, retention and efficiency
rows, and which of them shrink with samples when the power estimate scales a pair."""

from __future__ import annotations

import numpy as np
import pytest

from argus_eval.runner.plan.cell_keys import cell_key
from argus_eval.scoring.axis_registry import AXIS_REGISTRY, AxisInputs, AxisSpec, axis_specs, register_axis
from argus_eval.scoring.cells import mean_cell
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.pair_parts import PairInputs
from argus_eval.scoring.scorecard import compute_scorecard
from argus_eval.scoring.types import AxisSeries
from argus_eval.scoring.view import CellFacts, ScorecardView, build_view

CLEAN = cell_key("m", "reasoning", "d", "clean")
FOG = cell_key("m", "reasoning", "d", "image:fog@3")
SWAP = cell_key("m", "reasoning", "d", "control:swap@1")
OTHER = cell_key("n", "reasoning", "d", "clean")


def _view() -> ScorecardView:
    scores = {
        CLEAN: np.array([0.8, 0.6, 1.0]),
        FOG: np.array([0.4, 0.2, 0.6]),
        SWAP: np.array([0.1, 0.0, 0.2]),
        OTHER: np.array([0.5, 0.5, 0.5]),
    }
    facts = CellFacts({CLEAN: 0.25, FOG: 0.25, SWAP: 0.25}, {CLEAN: 0.9, FOG: 0.5, SWAP: None})
    return build_view(
        "m",
        scores,
        facts,
        retention={FOG: np.array([0.5, 0.25, 0.75])},
        efficiency_tasks={("m", "reasoning"): np.array([0.7, 0.6, 0.8]), ("n", "reasoning"): np.zeros(3)},
    )


def test_the_view_holds_the_models_cells_by_key_with_role_severity_and_task_facts() -> None:
    v = _view()
    assert list(v.cells) == sorted([CLEAN, FOG, SWAP])  # the other model's cell is not its
    assert [c.key for c in v.of_role("perturbation")] == [FOG]
    assert (FOG.ref.perturbation, FOG.ref.severity) == ("image:fog", 3)
    assert [c.key for c in v.controls()] == [SWAP]
    assert v.cell(CLEAN) is not None and v.cell(CLEAN).chance == 0.25  # type: ignore[union-attr]
    assert v.cell(OTHER) is None
    rates = v.format_rates()
    assert set(rates) == {CLEAN, FOG}  # a cell without a rate is no generative cell
    assert rates[FOG].values.tolist() == [0.5, 0.5, 0.5]
    assert list(v.efficiency_tasks) == ["reasoning"]
    assert v.clean == {("reasoning", "d"): pytest.approx(np.array([0.8, 0.6, 1.0]))}
    assert v.ratios == {"reasoning/d/image:fog@3": pytest.approx(np.array([0.5, 0.25, 0.75]))}


def test_scaling_shrinks_what_samples_narrow_and_keeps_the_rest() -> None:
    v = _view()
    half = v.scaled(0.5)
    # resampled figures: pulled halfway to row 0
    assert half.cells[CLEAN].score.values.tolist() == pytest.approx([0.8, 0.7, 0.9])
    assert half.retention[FOG].values.tolist() == pytest.approx([0.5, 0.375, 0.625])
    # timing trials and per-cell rates are no samples: as they were
    assert half.efficiency_tasks["reasoning"].values.tolist() == [0.7, 0.6, 0.8]
    assert not half.efficiency_tasks["reasoning"].shrinks
    assert half.format_rates()[CLEAN] is v.format_rates()[CLEAN]
    assert all(c.score.shrinks for c in v.cells.values()) and all(r.shrinks for r in v.retention.values())
    pair = PairInputs({"m": v, "n": build_view("n", {OTHER: np.array([0.5, 0.4, 0.6])})})
    assert set(pair.scaled(0.5, ["m"]).views) == {"m"}


def test_an_axis_reads_the_view_inside_the_scorecard() -> None:
    """The view an axis sees in a scored run holds every cell of the model with its task's facts."""
    seen: dict[str, ScorecardView] = {}

    def spy(x: AxisInputs) -> AxisSeries:
        seen[x.model] = x.view
        return AxisSeries.undefined("a spy")

    ids = [f"s{i}" for i in range(4)]
    clean = mean_cell(cell_key("A", "reasoning", "d", "clean"), ids, [1.0, 0.0, 1.0, 1.0])
    clean.chance, clean.format_rate = 0.5, 0.75
    fog = mean_cell(cell_key("A", "reasoning", "d", "image:fog@2"), ids, [1.0, 0.0, 0.0, 1.0])

    register_axis(AxisSpec("SPY", 70, "spy", "records its view", spy))
    try:
        assert "SPY" in [s.name for s in axis_specs()]
        compute_scorecard([clean, fog], {}, ScoringOptions())
    finally:
        AXIS_REGISTRY.unregister("SPY")
    v = seen["A"]
    assert list(v.cells) == [clean.key, fog.key]
    assert v.cells[clean.key].chance == 0.5
    assert v.format_rates()[clean.key].values.tolist() == [0.75]
    assert v.retention[fog.key].values.tolist() == [pytest.approx(2 / 3)]

"""Image reliance from cell data: paired bootstrap, unchanged predictions, and controls kept out of RR."""

from __future__ import annotations

import numpy as np

from argus_eval.results_model.reliance import RelianceEntry
from argus_eval.runner.plan.cell_keys import cell_key
from argus_eval.scoring import CellKey, ScoringOptions, compute_scorecard, mean_cell
from argus_eval.scoring.reliance import image_reliance
from argus_eval.scoring.types import CellData

N = 300
IDS = [f"q{i:04d}" for i in range(N)]
SWAP = "control:swap@1"
BLANK = "control:blank@1"


def _key(model: str, condition: str) -> CellKey:
    return cell_key(model, "reasoning", "shapes", condition)


def _cell(model: str, condition: str, preds: list[str], truth: list[str]) -> CellData:
    scores = [float(p == t) for p, t in zip(preds, truth, strict=True)]
    return mean_cell(_key(model, condition), IDS, scores, preds)


def _world() -> tuple[list[str], list[str], list[str]]:
    """Truth per question, the question's 'family' prior answer, and the truth of a swapped image."""
    rng = np.random.default_rng(7)
    answers = np.array(["yes", "no", "1", "2", "red", "blue"])
    truth = list(answers[rng.integers(0, 6, N)])
    prior = list(answers[rng.integers(0, 6, N)])
    swapped = list(np.roll(np.array(truth), 1))  # what the image shown under the swap would answer
    return truth, prior, swapped


def _reliance(
    cells: list[CellData], skipped: dict[CellKey, str] | None = None
) -> dict[str, list[RelianceEntry]]:
    return image_reliance(cells, resamples=200, seed=3, confidence=0.95, skipped=skipped)


def test_a_key_knows_its_role_from_the_condition_kind() -> None:
    swap, fog, clean = _key("m", SWAP), _key("m", "image:fog@3"), _key("m", "clean")
    assert swap.is_control and not swap.is_perturbation and not swap.is_clean
    assert fog.is_perturbation and not fog.is_control and clean.is_clean and not clean.is_perturbation
    assert swap.ref.name == "swap" and fog.ref.perturbation == "image:fog" and fog.ref.severity == 3
    assert swap.clean_key() == clean and clean.clean_key() == clean


def test_a_model_that_ignores_its_image_has_reliance_zero() -> None:
    truth, prior, _ = _world()
    # its answer depends on the question only, so clean, swapped and blank predictions coincide
    cells = [_cell("blind", c, prior, truth) for c in ("clean", SWAP, BLANK)]
    (entry,) = _reliance(cells)["blind"]
    assert entry.n_samples == N
    for name in ("swap", "blank"):
        c = entry.controls[name]
        assert c.interval is not None
        lo, hi = c.interval
        assert c.reliance == 0.0 and lo <= 0.0 <= hi
        assert c.same_prediction == 1.0


def test_a_model_that_reads_the_image_loses_its_clean_accuracy() -> None:
    truth, _, swapped = _world()
    clean_acc = float(np.mean([t == t for t in truth]))
    swap_acc = float(np.mean([s == t for s, t in zip(swapped, truth, strict=True)]))
    cells = [
        _cell("reader", "clean", truth, truth),
        _cell("reader", SWAP, swapped, truth),
        _cell("reader", BLANK, ["?"] * N, truth),
    ]
    (entry,) = _reliance(cells)["reader"]
    swap = entry.controls["swap"]
    assert entry.clean == clean_acc
    assert swap.reliance is not None and swap.interval is not None and swap.same_prediction is not None
    assert abs(swap.reliance - (clean_acc - swap_acc)) < 1e-12
    lo, hi = swap.interval
    assert 0.0 < lo <= swap.reliance <= hi
    assert abs(swap.same_prediction - swap_acc) < 1e-12  # a prediction stays only where the answers coincide
    blank = entry.controls["blank"]
    assert blank.reliance == clean_acc and blank.same_prediction == 0.0


def test_the_interval_resamples_clean_and_control_together() -> None:
    # identical per-sample scores under both conditions: a paired interval is exactly [0, 0]; an
    # unpaired one (independent resamples of each) would not be
    truth, prior, _ = _world()
    cells = [_cell("m", "clean", prior, truth), _cell("m", SWAP, list(reversed(prior)), truth)]
    cells[1] = mean_cell(_key("m", SWAP), IDS, cells[0].components[:, 0].tolist(), cells[1].predictions)
    swap = _reliance(cells)["m"][0].controls["swap"]
    assert swap.interval == (0.0, 0.0)
    assert swap.same_prediction is not None and swap.same_prediction < 1.0


def test_skipped_controls_are_named_never_zero() -> None:
    truth, prior, _ = _world()
    cells = [_cell("m", "clean", prior, truth), _cell("m", BLANK, prior, truth)]
    reason = "the swap control needs at least two distinct images, the cell has 1"
    (entry,) = _reliance(cells, skipped={_key("m", SWAP): reason})["m"]
    assert entry.controls["swap"].model_dump(exclude_unset=True) == {"condition": SWAP, "skipped": reason}
    assert entry.controls["swap"].reliance is None
    # a control without any clean cell is skipped by name too
    only = _reliance([_cell("m", SWAP, prior, truth)])["m"][0]
    assert only.controls["swap"].skipped == "no clean cell to compare with"


def test_no_controls_no_entries() -> None:
    truth, prior, _ = _world()
    assert _reliance([_cell("m", "clean", prior, truth)]) == {}


def test_controls_never_enter_robustness_retention() -> None:
    truth, prior, swapped = _world()
    cells = [
        _cell("m", "clean", truth, truth),
        _cell("m", SWAP, swapped, truth),
        _cell("m", BLANK, prior, truth),
    ]
    opts = ScoringOptions(resamples=0)
    card = compute_scorecard(cells, {}, opts)
    assert card.models["m"].value("RR") is None and card.models["m"].retention == []
    perturbed = _cell("m", "image:fog@3", truth[:-30] + swapped[-30:], truth)
    card = compute_scorecard([*cells, perturbed], {}, opts)
    assert [r.condition for r in card.models["m"].retention] == ["image:fog@3"]
    assert card.models["m"].value("RR") == card.models["m"].retention[0].retention
    assert card.model_dump(mode="json")["scoring_options"]["reliance"] == "reported"

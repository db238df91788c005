"""Paired bootstrap: invariants of the resampling, seeding, intervals and pairwise rank shares."""

from __future__ import annotations

import json

import numpy as np
import pytest

from argus_eval.errors import MetricError
from argus_eval.runner.plan.cell_keys import cell_key
from argus_eval.scoring.cells import mean_cell, ratio_cell
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.paired import align, paired_counts
from argus_eval.scoring.scorecard import bootstrap_scorecard, compute_scorecard
from argus_eval.scoring.types import CellData
from bootstrap_fixtures import CONDITIONS, GROUPS, IDS, OPTS, N, profiles, random_cells
from scorecard_fixtures import axes_of


def test_point_values_match_and_intervals_contain_them() -> None:
    cells = random_cells(1)
    point = compute_scorecard(cells, profiles(), OPTS)
    boot = bootstrap_scorecard(cells, profiles(), OPTS)
    for m, card in boot.models.items():
        for axis, v in axes_of(boot, m).items():
            assert v.value == axes_of(point, m)[axis].value
            interval = card.intervals[axis]
            assert interval is not None  # resampled
            lo, hi = interval
            assert v.value is not None and lo <= v.value <= hi, (m, axis)
        for r in card.retention:
            retained = r.intervals.retention
            assert retained is not None
            lo, hi = retained
            assert r.retention is not None and lo <= r.retention <= hi
    for c in boot.scorecard_cells:
        assert c.interval is not None and c.score is not None and c.interval[0] <= c.score <= c.interval[1]
    # E is not resampled: a zero-width interval
    e = axes_of(boot, "A")["E"].value
    assert boot.models["A"].intervals["E"] == (e, e)


def test_same_seed_same_result_and_seed_matters() -> None:
    cells = random_cells(2)
    a = json.dumps(bootstrap_scorecard(cells, profiles(), OPTS).model_dump(mode="json"))
    again = bootstrap_scorecard(random_cells(2), profiles(), OPTS)
    b = json.dumps(again.model_dump(mode="json"))
    assert a == b
    c = bootstrap_scorecard(cells, profiles(), OPTS.model_copy(update={"seed": 12})).model_dump(mode="json")
    assert json.dumps(c) != a
    assert c["models"]["A"]["P"] == json.loads(a)["models"]["A"]["P"]


def test_counts_are_multinomial_rows_and_shared() -> None:
    groups = align(random_cells(3))
    counts = paired_counts(groups[0], 50, seed=5)
    assert counts.shape == (51, N)
    assert np.all(counts[0] == 1)
    assert np.all(counts.sum(axis=1) == N)
    assert np.array_equal(counts, paired_counts(groups[0], 50, seed=5))
    by = {(g.model, g.task, g.dataset): g for g in groups}
    first = groups[0]
    # another model that scored the same samples of the same (task, dataset) gets the same draw (paired)
    assert first.model == "A" and by[("B", first.task, first.dataset)].ids == first.ids
    assert np.array_equal(counts, paired_counts(by[("B", first.task, first.dataset)], 50, seed=5))
    # different (task, dataset) groups draw independently
    other = next(g for g in groups if (g.task, g.dataset) != (first.task, first.dataset))
    assert not np.array_equal(counts[1:], paired_counts(other, 50, seed=5)[1:])


def test_pairing_identical_cells_give_identical_resamples() -> None:
    # A perturbed cell identical to its clean cell retains exactly 1 and flips nothing in every resample;
    # only paired resampling (same indices for clean and perturbed) guarantees this.
    scores = np.random.default_rng(4).random(N)
    cells = [
        mean_cell(cell_key("A", "retrieval", "coco", c), IDS, scores, ["p"] * N)
        for c in ("clean", "image:fog@1")
    ]
    card = bootstrap_scorecard(cells, {}, OPTS).models["A"]
    assert card.intervals["RR"] == (1.0, 1.0)
    assert card.retention[0].intervals.flip_rate == (0.0, 0.0)
    # two models with identical data tie on every shared cell in every resample: P(A beats B) is exactly
    # one half (ties count half) and neither is claimed above the other
    twin = [mean_cell(cell_key("B", "retrieval", "coco", c), IDS, scores) for c in ("clean", "image:fog@1")]
    boot = bootstrap_scorecard(cells + twin, {}, OPTS)
    assert boot.bootstrap is not None
    assert boot.rankings.share("P", "A", "B") == 0.5
    assert boot.comparison.claims == []
    assert boot.models["A"].intervals["P"] == boot.models["B"].intervals["P"]


def test_strictly_better_model_wins_every_resample() -> None:
    rng = np.random.default_rng(5)
    cells = []
    for t, d in GROUPS:
        for cond in CONDITIONS:
            cells.append(mean_cell(cell_key("weak", t, d, cond), IDS, rng.uniform(0.1, 0.9, N)))
            cells.append(mean_cell(cell_key("strong", t, d, cond), IDS, np.ones(N)))
    boot = bootstrap_scorecard(cells, {}, OPTS)
    assert boot.bootstrap is not None
    for axis in ("ARGUS", "P"):
        assert boot.rankings.share(axis, "strong", "weak") == 1.0
        assert boot.rankings.share(axis, "weak", "strong") == 0.0
    js = boot.model_dump(mode="json")
    assert js["rankings"]["pairwise"]["ARGUS"]["strong"]["weak"] == 1.0
    assert js["bootstrap"]["resamples"] == 300


def test_a_models_cells_use_its_own_samples_and_a_pair_the_shared_ones() -> None:
    full = mean_cell(cell_key("A", "reasoning", "clevr", "clean"), ["a", "b", "c", "d"], [1, 0, 1, 1])
    # B failed on sample "b": B's failure never reaches A's score; the pair is compared on a, c, d
    part = mean_cell(cell_key("B", "reasoning", "clevr", "clean"), ["d", "c", "a"], [0, 1, 1])
    sc = compute_scorecard([full, part], {}, ScoringOptions())
    by = {c.model: c for c in sc.scorecard_cells}
    assert by["A"].score == pytest.approx(3 / 4) and by["A"].n_samples == 4 and by["A"].n_dropped == 0
    assert by["B"].score == pytest.approx(2 / 3) and by["B"].n_samples == 3 and by["B"].n_dropped == 0
    assert axes_of(sc, "A")["P"].value == pytest.approx(3 / 4)
    assert [(c.models, c.cells) for c in sc.comparison.common_samples] == [
        (("A", "B"), {"reasoning/clevr": 3})
    ]
    # on a, c, d: A scores 1, B 2/3, so A wins the one shared cell
    assert sc.comparison.head_to_head["P"]["A"]["B"] == 1.0
    # within one model, clean and perturbed are paired: A's fog cell lacks "c", so both drop it
    fog = mean_cell(cell_key("A", "reasoning", "clevr", "image:fog@1"), ["a", "b", "d"], [1, 0, 0])
    sc = compute_scorecard([full, fog, part], {}, ScoringOptions())
    by_key = {c.key: c for c in sc.scorecard_cells}
    assert (
        by_key[("A", "reasoning", "clevr", "clean")].score == pytest.approx(2 / 3)
        and by_key[("A", "reasoning", "clevr", "clean")].n_dropped == 1
    )
    assert sc.models["A"].retention[0].retention == pytest.approx(1 / 2)
    assert {c.model: c.score for c in sc.scorecard_cells if c.model == "B"} == {"B": pytest.approx(2 / 3)}


def test_corpus_metric_uses_summed_counts() -> None:
    # BLEU-like: score = sum(matches) / sum(candidates), not the mean of per-sample ratios
    c = ratio_cell(cell_key("A", "captioning", "coco", "clean"), ["x", "y"], [1, 9], [2, 10])
    sc = compute_scorecard([c], {}, ScoringOptions())
    assert sc.scorecard_cells[0].score == pytest.approx(10 / 12)


def test_inconsistent_inputs_raise() -> None:
    good = mean_cell(cell_key("A", "reasoning", "clevr", "clean"), ["a", "b"], [1, 0])
    with pytest.raises(MetricError):
        compute_scorecard([good, good], {}, ScoringOptions())
    bad = CellData(cell_key("B", "reasoning", "clevr", "clean"), ["a", "b"], np.ones((3, 2)), good.finish)
    with pytest.raises(MetricError):
        compute_scorecard([good, bad], {}, ScoringOptions())
    # a perturbed cell sharing no sample with its clean cell cannot be paired: it is left out of RR,
    # named, and the clean cell keeps its score
    disjoint = mean_cell(cell_key("A", "reasoning", "clevr", "image:fog@1"), ["c"], [1])
    sc = compute_scorecard([good, disjoint], {}, ScoringOptions())
    assert [c.key for c in sc.scorecard_cells] == [("A", "reasoning", "clevr", "clean")]
    assert sc.scorecard_cells[0].score == pytest.approx(0.5)
    assert (
        "shares no scored sample" in axes_of(sc, "A")["RR"].detail["left_out"]["reasoning/clevr/image:fog@1"]
    )

"""One model's failures never move another model's figures; a pair is compared on the samples both
scored, with n shown, and claims nothing when either did not complete a shared cell."""

from __future__ import annotations

import json

import numpy as np
import pytest

from argus_eval.results_model.scorecard import ScorecardPart
from argus_eval.runner.plan.cell_keys import cell_key
from argus_eval.scoring.cells import mean_cell
from argus_eval.scoring.completeness import Coverage, shortfalls
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.paired import align, paired_counts, restrict
from argus_eval.scoring.scorecard import bootstrap_scorecard
from argus_eval.scoring.types import CellData, CellKey

N = 60
IDS = [f"s{i:02d}" for i in range(N)]
GROUPS = (("reasoning", "studio"), ("reasoning", "clutter"), ("captioning", "studio"))
CONDITIONS = ("clean", "image:fog@2")
OPTS = ScoringOptions(resamples=200, seed=3)


def model_cells(model: str, base: float, seed: int, keep: set[str] | None = None) -> list[CellData]:
    """A model's cells: per-sample 0/1 scores around base; keep: the samples it scored (default all)."""
    rng = np.random.default_rng(seed)
    out = []
    for t, d in GROUPS:
        for j, cond in enumerate(CONDITIONS):
            scores = (rng.random(N) < base * (1 - 0.2 * j)).astype(float)
            ids = [i for i in IDS if keep is None or i in keep]
            out.append(mean_cell(cell_key(model, t, d, cond), ids, [scores[IDS.index(i)] for i in ids]))
    return out


def planned(cells: list[CellData]) -> dict[CellKey, int]:
    return {c.key: N for c in cells}


def row(sc: ScorecardPart, model: str) -> str:
    """A model's scorecard row and cells as JSON text (exact comparison)."""
    part = sc.model_dump(mode="json")
    cells = [c for c in part["scorecard_cells"] if c["model"] == model]
    return json.dumps({"row": part["models"][model], "cells": cells}, sort_keys=True)


def test_a_models_figures_do_not_depend_on_another_models_failures() -> None:
    a = model_cells("A", 0.7, 1)
    alone = bootstrap_scorecard(a, {}, OPTS, planned=planned(a))
    # B scored 3 of 60 samples (the served row that timed out), then B failing everything, then B
    # complete: A's row (every axis, interval and cell) is the same text each time
    few = model_cells("B", 0.4, 2, keep={"s05", "s17", "s42"})
    partial = bootstrap_scorecard(a + few, {}, OPTS, planned=planned(a + model_cells("B", 0.4, 2)))
    none_scored = bootstrap_scorecard(a, {}, OPTS, planned=planned(a + model_cells("B", 0.4, 2)))
    complete = bootstrap_scorecard(a + model_cells("B", 0.4, 2), {}, OPTS)
    for sc in (partial, none_scored, complete):
        assert row(sc, "A") == row(alone, "A")
    # A's P is the mean over tasks of the dataset means of its own 60-sample cells
    by_task: dict[str, list[float]] = {}
    for c in a:
        if c.key.is_clean:
            by_task.setdefault(c.key.task, []).append(float(c.components[:, 0].mean()))
    expected = float(np.mean([np.mean(v) for v in by_task.values()]))
    assert partial.models["A"].value("P") == pytest.approx(expected, abs=1e-12)
    assert {c.n_samples for c in partial.scorecard_cells if c.model == "A"} == {N}
    assert {c.n_samples for c in partial.scorecard_cells if c.model == "B"} == {3}
    # B with no scored sample still has a row, every axis undefined with the reason
    assert none_scored.models["B"].value("P") is None
    assert "all 360 of its samples failed" in none_scored.models["B"].why_undefined("P")


def test_a_pair_is_compared_on_the_samples_both_scored() -> None:
    keep = set(IDS[::2]) | {"s01"}  # B scored 31 of 60
    a, b = model_cells("A", 0.7, 1), model_cells("B", 0.6, 2, keep=keep)
    opts = OPTS.model_copy(update={"claim_min_scored": 0.5})
    sc = bootstrap_scorecard(a + b, {}, opts, planned=planned(a + b))
    common = sorted(keep)
    shared = sc.comparison.common("A", "B")
    assert shared is not None and shared.cells == {f"{t}/{d}": len(common) for t, d in GROUPS}
    # h on P, by hand: per (task, dataset) the clean means on the common samples, compared; then the
    # mean over each task's datasets and over tasks
    parts: dict[str, list[float]] = {}
    for t, d in GROUPS:
        means = []
        for cells in (a, b):
            c = next(x for x in cells if x.key == cell_key(x.key.model, t, d, "clean"))
            pos = {s: i for i, s in enumerate(c.sample_ids)}
            means.append(float(np.mean([c.components[pos[s], 0] for s in common])))
        parts.setdefault(t, []).append(1.0 if means[0] > means[1] else 0.0 if means[0] < means[1] else 0.5)
    expected_h = float(np.mean([np.mean(v) for v in parts.values()]))
    assert sc.comparison.head_to_head["P"]["A"]["B"] == pytest.approx(expected_h)
    # the pair's resample is one draw over exactly the common samples, seeded like every group: the
    # restricted groups of A and B get the same counts, and the same as a model that scored only those
    groups = {(g.model, g.task, g.dataset): g for g in align(a + b)}
    ra = restrict(groups[("A", "reasoning", "studio")], common)
    rb = restrict(groups[("B", "reasoning", "studio")], common)
    assert np.array_equal(paired_counts(ra, 50, 3), paired_counts(rb, 50, 3))
    assert np.array_equal(
        paired_counts(ra, 50, 3), paired_counts(groups[("B", "reasoning", "studio")], 50, 3)
    )
    # deterministic: the same inputs give the same pairwise shares
    again = bootstrap_scorecard(a + b, {}, opts, planned=planned(a + b))
    assert again.rankings.pairwise == sc.rankings.pairwise


def test_an_incomplete_pair_claims_nothing_and_names_the_counts() -> None:
    # strong wins every resample when both are complete
    strong = [mean_cell(cell_key("strong", t, d, c), IDS, np.ones(N)) for t, d in GROUPS for c in CONDITIONS]
    weak = model_cells("weak", 0.3, 4)
    both = bootstrap_scorecard(strong + weak, {}, OPTS, planned=planned(strong + weak))
    assert {(c.axis, c.above) for c in both.comparison.claims} == {
        ("capability", "strong"),
        ("overall", "strong"),
    }
    assert both.comparison.incomplete == []
    # weak scored 54 of 60 (90 %) of one clean cell: below 95 %, so no claim on either axis
    short = [c for c in weak if c.key != cell_key("weak", "reasoning", "clutter", "clean")]
    short.append(mean_cell(cell_key("weak", "reasoning", "clutter", "clean"), IDS[:54], np.zeros(54)))
    sc = bootstrap_scorecard(strong + short, {}, OPTS, planned=planned(strong + weak))
    assert sc.comparison.claims == []
    assert sc.comparison.ties == []
    inc = {i.axis: i for i in sc.comparison.incomplete}
    assert set(inc) == {"capability", "overall"}
    short_cell = [(c.key, c.scored, c.samples) for c in inc["capability"].cells]
    assert short_cell == [(("weak", "reasoning", "clutter", "clean"), 54, 60)]
    assert "weak scored 54 of 60 samples on reasoning/clutter" in inc["capability"].reason
    assert inc["capability"].p == 1.0  # the verdict is shown, the claim is not made
    assert sc.rankings.ranks("capability") == {"strong": 1, "weak": 1}
    assert "Incomplete" in str(sc.gap.sentence)
    # at a stated share of 90 % the cell is complete and the claim is made
    lower = OPTS.model_copy(update={"claim_min_scored": 0.9})
    sc90 = bootstrap_scorecard(strong + short, {}, lower, planned=planned(strong + weak))
    assert {(c.axis, c.above) for c in sc90.comparison.claims} == {
        ("capability", "strong"),
        ("overall", "strong"),
    }
    js = sc.model_dump(mode="json")
    assert js["scoring_options"]["claim_min_scored"] == 0.95
    assert js["comparison"]["incomplete"][0]["cells"][0] == {
        "model": "weak",
        "task": "reasoning",
        "dataset": "clutter",
        "condition": "clean",
        "perturbation": None,  # a clean cell has none (nor a severity)
        "severity": None,
        "scored": 54,
        "samples": 60,
    }


def test_a_perturbed_shortfall_withholds_only_the_overall_claim() -> None:
    cov = Coverage(
        planned={cell_key(m, "reasoning", "studio", c): 10 for m in ("A", "B") for c in CONDITIONS},
        scored={
            **{cell_key(m, "reasoning", "studio", c): 10 for m in ("A", "B") for c in CONDITIONS},
            cell_key("B", "reasoning", "studio", "image:fog@2"): 9,
        },
    )
    out = shortfalls(cov, 0.95)
    assert out["capability"] == {} and set(out["overall"]) == {("A", "B")}
    assert shortfalls(cov, 0.9)["overall"] == {}
    gone = Coverage(cov.planned, cov.scored, {"C": "could not load (no such directory)"})
    entry = shortfalls(gone, 0.95)["capability"][("A", "C")]
    assert entry == {"reason": "C ran no cell: could not load (no such directory)", "cells": []}


def test_a_model_that_ran_nothing_has_a_row_and_no_claim() -> None:
    a = model_cells("A", 0.7, 1)
    sc = bootstrap_scorecard(a, {}, OPTS, planned=planned(a), unavailable={"C": "could not load (bad file)"})
    assert sc.models["C"].value("ARGUS") is None
    assert sc.models["C"].why_undefined("P") == "no cell ran: could not load (bad file)"
    assert [i.models for i in sc.comparison.incomplete] == [("A", "C"), ("A", "C")]
    assert sc.comparison.not_comparable == []
    assert sc.rankings.ranks("overall")["C"] is None

"""ARGUS axes against hand-computed values, undefined cases and range invariants."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.errors import MetricError
from argus_eval.runner.plan.cell_keys import cell_key
from argus_eval.scoring.axes import cdc, cdc_cv
from argus_eval.scoring.cells import mean_cell
from argus_eval.scoring.options import EfficiencyBudgets, ScoringOptions
from argus_eval.scoring.scorecard import compute_scorecard
from argus_eval.scoring.types import CellData
from scorecard_fixtures import axes_of

IDS = ["s0", "s1", "s2", "s3"]
FP = {"id": "fp-test", "device": "cpu"}


def spread(mean: float) -> list[float]:
    """Four per-sample scores in [0, 1] whose mean is `mean` (not all equal)."""
    d = min(0.05, mean, 1 - mean)
    return [mean - d, mean + d, mean - d / 2, mean + d / 2]


def cell(
    model: str, task: str, dataset: str, condition: str, mean: float, preds: list[str] | None = None
) -> CellData:
    return mean_cell(cell_key(model, task, dataset, condition), IDS, spread(mean), preds)


def profile(lat: float, mem: float, flops: int, tput: float, fp: dict[str, str] = FP) -> EfficiencyProfile:
    return EfficiencyProfile(lat, lat * 1.5, tput, mem, flops, 1000, dict(fp))


# Per-(task, dataset) clean means and per-severity perturbed means of the two models.
A_CLEAN = {
    ("retrieval", "coco"): 0.8,
    ("retrieval", "flickr"): 0.6,
    ("reasoning", "clevr"): 0.9,
    ("reasoning", "vcr"): 0.7,
}
A_FOG1 = {
    ("retrieval", "coco"): 0.8,
    ("retrieval", "flickr"): 0.3,
    ("reasoning", "clevr"): 0.95,
    ("reasoning", "vcr"): 0.35,
}
B_CLEAN = {
    ("retrieval", "coco"): 0.6,
    ("retrieval", "flickr"): 0.6,
    ("reasoning", "clevr"): 0.5,
    ("reasoning", "vcr"): 0.5,
}


def two_model_cells() -> list[CellData]:
    cells = []
    for (t, d), v in A_CLEAN.items():
        cells.append(cell("A", t, d, "clean", v, ["a", "b", "c", "d"]))
        cells.append(cell("A", t, d, "image:fog@1", A_FOG1[(t, d)], ["a", "x", "c", "d"]))
        cells.append(cell("A", t, d, "image:fog@2", v / 2))
    for (t, d), v in B_CLEAN.items():
        cells.append(cell("B", t, d, "clean", v))
        cells.append(cell("B", t, d, "image:fog@1", v))
        cells.append(cell("B", t, d, "image:fog@2", 0.8 * v))
    return cells


def two_model_profiles() -> dict[str, EfficiencyProfile | None]:
    return {"A": profile(10, 1000, 10**9, 100), "B": profile(5, 500, 4 * 10**9, 50)}


def test_cdc_paper_example_and_hand_values() -> None:
    # mean 73.4, |dev| = 11.1 each -> 1 - 11.1/73.4
    assert cdc([84.5, 62.3]) == pytest.approx(0.848774, abs=5e-7)
    assert cdc([84.5, 62.3]) == pytest.approx(1 - 11.1 / 73.4, rel=1e-12)
    assert cdc([1, 2, 3]) == pytest.approx(2 / 3)  # mean 2, mean |dev| 2/3
    assert cdc([0, 0, 3]) == pytest.approx(-1 / 3)  # raw value can fall below 0
    assert cdc_cv([1, 3]) == pytest.approx(0.5)  # std 1 (ddof 0), mean 2
    with pytest.raises(MetricError):
        cdc([0.5])
    with pytest.raises(MetricError):
        cdc([0.0, 0.0])


def test_axes_against_hand_computed_values() -> None:
    sc = compute_scorecard(two_model_cells(), two_model_profiles(), ScoringOptions())
    a, b = axes_of(sc, "A"), axes_of(sc, "B")

    p_a = ((0.8 + 0.6) / 2 + (0.9 + 0.7) / 2) / 2
    cdc_a = ((1 - 0.1 / 0.7) + (1 - 0.1 / 0.8)) / 2
    # fog@1 retentions 1, .5, min(1, .95/.9)=1, .5; fog@2 all .5
    rr_a = (1 + 0.5 + 1 + 0.5 + 4 * 0.5) / 8
    # latency 10 vs best 5, memory 1000 vs 500, flops best, throughput best
    e_a = (0.5 * 0.5 * 1 * 1) ** 0.25
    p_b, cdc_b, rr_b = 0.55, 1.0, (4 * 1 + 4 * 0.8) / 8
    e_b = (1 * 1 * 0.25 * 0.5) ** 0.25
    expected = {
        "A": {"P": p_a, "CDC": cdc_a, "RR": rr_a, "E": e_a},
        "B": {"P": p_b, "CDC": cdc_b, "RR": rr_b, "E": e_b},
    }
    for m, axes in (("A", a), ("B", b)):
        for name, v in expected[m].items():
            assert axes[name].value == pytest.approx(v, rel=1e-9), (m, name)
        argus = sum(expected[m].values()) / 4
        assert axes["ARGUS"].value == pytest.approx(argus, rel=1e-9)
        assert axes["R"].value == pytest.approx((expected[m]["CDC"] + expected[m]["RR"]) / 2, rel=1e-9)

    assert sc.models["A"].severity_curves == {
        "image:fog": {"1": pytest.approx(0.75), "2": pytest.approx(0.5)}
    }
    flips = {r.condition + r.dataset: r.flip_rate for r in sc.models["A"].retention}
    assert flips["image:fog@1coco"] == pytest.approx(0.25)  # one of four predictions changed
    assert flips["image:fog@2coco"] is None  # no predictions given for that cell

    # Without a bootstrap no model is claimed above another (docs/comparisons.md): ranks stay shared.
    assert sc.rankings.ranks("capability") == sc.rankings.ranks("overall") == {"A": 1, "B": 1}
    assert sc.comparison.claims == []
    assert str(sc.gap.sentence).startswith("No bootstrap was run")


def test_cdc_variants_hand_values() -> None:
    cells = two_model_cells()
    pooled = axes_of(compute_scorecard(cells, {}, ScoringOptions(cdc_variant="pooled")), "A")["CDC"]
    # pooled over datasets coco .8, flickr .6, clevr .9, vcr .7: mean .75, mean |dev| .1
    assert pooled.value == pytest.approx(1 - 0.1 / 0.75)
    cv = axes_of(compute_scorecard(cells, {}, ScoringOptions(cdc_variant="cv")), "A")["CDC"]
    assert cv.value == pytest.approx(((1 - 0.1 / 0.7) + (1 - 0.1 / 0.8)) / 2)  # two datasets: std = |dev|


def test_budget_mode_hand_values() -> None:
    opts = ScoringOptions(efficiency_mode="budget", budgets=EfficiencyBudgets(latency_ms=5, memory_mb=2000))
    sc = compute_scorecard(two_model_cells(), two_model_profiles(), opts)
    e = axes_of(sc, "A")["E"]
    assert e.value == pytest.approx(math.sqrt(0.5 * 1.0))  # 5/10 and min(1, 2000/1000)
    assert set(e.detail["left_out"]) == {"flops", "throughput"}


def test_undefined_cases_are_named() -> None:
    cells = two_model_cells()
    # C: one retrieval dataset only, no reasoning; its perturbed flickr cell has no clean partner;
    # its clean coco score is 0 so the coco retention cell is left out.
    cells.append(mean_cell(cell_key("C", "retrieval", "coco", "clean"), IDS, [0, 0, 0, 0]))
    cells.append(cell("C", "retrieval", "coco", "image:fog@1", 0.3))
    cells.append(cell("C", "retrieval", "flickr", "image:fog@1", 0.3))
    profiles = {**two_model_profiles(), "C": None}
    sc = compute_scorecard(cells, profiles, ScoringOptions())
    c = axes_of(sc, "C")

    assert c["P"].value == 0.0
    assert c["P"].detail["missing_tasks"] == ["reasoning"]
    assert c["P"].detail["missing_datasets"] == {"retrieval": ["flickr"]}
    assert c["CDC"].value is None and "only 1 dataset (coco)" in str(c["CDC"].undefined_reason)
    assert c["RR"].value is None
    assert c["RR"].detail["left_out"] == {
        "retrieval/coco/image:fog@1": "clean score is 0",
        "retrieval/flickr/image:fog@1": "no clean cell to pair with",
    }
    assert c["E"].value is None and c["E"].undefined_reason == "no efficiency profile"
    assert c["ARGUS"].value == pytest.approx(0.0)  # only P (= 0) is defined
    assert set(c["ARGUS"].detail["left_out"]) == {"CDC", "RR", "E"}
    assert c["ARGUS"].detail["weights_used"] == {"P": 1.0}
    assert c["R"].value is None
    js = sc.model_dump(mode="json")["models"]["C"]
    assert set(js["undefined"]) == {"CDC", "RR", "E", "R"}

    # E of the others is unaffected by C's missing profile
    assert axes_of(sc, "A")["E"].value == pytest.approx(0.5**0.5)


def test_single_dataset_per_task_leaves_cdc_undefined_and_argus_renormalises() -> None:
    cells = [cell("A", "retrieval", "coco", "clean", 0.8), cell("A", "reasoning", "clevr", "clean", 0.6)]
    a = axes_of(compute_scorecard(cells, {}, ScoringOptions()), "A")
    assert a["CDC"].value is None
    assert a["CDC"].detail["left_out"] == {
        "reasoning": "only 1 dataset (clevr)",
        "retrieval": "only 1 dataset (coco)",
    }
    assert a["ARGUS"].value == pytest.approx(0.7)  # P alone, weight renormalised to 1
    # pooled variant: two datasets across tasks -> defined
    pooled = axes_of(compute_scorecard(cells, {}, ScoringOptions(cdc_variant="pooled")), "A")["CDC"]
    assert pooled.value == pytest.approx(1 - 0.1 / 0.7)


def test_mixed_fingerprints_never_mix() -> None:
    profiles = {"A": profile(10, 1000, 10**9, 100), "B": profile(5, 500, 10**9, 50, {"id": "other"})}
    sc = compute_scorecard(two_model_cells(), profiles, ScoringOptions())
    for m in ("A", "B"):
        e = axes_of(sc, m)["E"]
        assert e.value is None and "different hardware fingerprints" in str(e.undefined_reason)
        assert "E" in axes_of(sc, m)["ARGUS"].detail["left_out"]


def test_clamped_cdc_keeps_raw() -> None:
    cells = [cell("A", "retrieval", d, "clean", v) for d, v in (("x", 0.02), ("y", 0.02), ("z", 0.9))]
    a = axes_of(compute_scorecard(cells, {}, ScoringOptions()), "A")["CDC"]
    means = [0.02, 0.02, 0.9]
    assert a.raw == pytest.approx(cdc(means)) and a.raw is not None and a.raw < 0
    assert a.value == 0.0


def test_every_axis_in_unit_interval_on_random_runs() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        cells = []
        for m in ("A", "B", "C"):
            for t, ds in (("retrieval", ("coco", "flickr", "vg")), ("reasoning", ("clevr",))):
                for d in ds:
                    for cond in ("clean", "image:defocus_blur@1", "text:typos@3"):
                        cells.append(
                            mean_cell(cell_key(m, t, d, cond), IDS, rng.random(4) ** rng.uniform(0.2, 5))
                        )
        profiles = {
            m: profile(
                rng.uniform(1, 100), rng.uniform(1, 100), int(rng.integers(1, 10**9)), rng.uniform(1, 100)
            )
            for m in "ABC"
        }
        sc = compute_scorecard(cells, profiles, ScoringOptions())
        for card in sc.models.values():
            for value in card.axis_values().values():
                assert value is not None and 0.0 <= value <= 1.0


def test_to_json_is_plain_and_deterministic() -> None:
    sc = compute_scorecard(two_model_cells(), two_model_profiles(), ScoringOptions())
    js = sc.model_dump(mode="json")
    backwards = compute_scorecard(list(reversed(two_model_cells())), two_model_profiles(), ScoringOptions())
    again = backwards.model_dump(mode="json")
    assert json.dumps(js) == json.dumps(again)
    assert list(js) == [
        "axes",
        "models",
        "rankings",
        "gap",
        "comparison",
        "below_chance",
        "scorecard_cells",
        "bootstrap",
        "scoring_options",
    ]
    a = js["models"]["A"]
    for k in ("P", "CDC", "RR", "E", "ARGUS", "R", "intervals", "undefined"):
        assert k in a
    assert type(a["P"]) is float and a["undefined"] == {}
    assert js["gap"]["sentence"].startswith("No bootstrap was run")
    assert js["scorecard_cells"][0]["model"] == "A" and type(js["scorecard_cells"][0]["score"]) is float
    assert js["bootstrap"] is None
    assert ScoringOptions.model_validate(js["scoring_options"]) == ScoringOptions()


def test_options_forbid_unknown_keys() -> None:
    with pytest.raises(ValueError):
        ScoringOptions.model_validate({"weight": {}})
    with pytest.raises(ValueError):
        ScoringOptions(efficiency_mode="budget")

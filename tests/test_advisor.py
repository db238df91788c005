"""The deployment advisor on hand-made results.json dicts: constraints, ranking, ties, misses, devices."""

from __future__ import annotations

import json

import pytest

from advisor_fixtures import advise, model, profile, results, scorecard_cell, shares
from argus_eval.advisor import Constraints, standard_profiles


def _capable_vs_small() -> dict[str, object]:
    """'big' is the most capable and the run's ARGUS leader but needs 6 GB; 'small' fits in 2 GB."""
    return results(
        {
            "big": model(0.90, 0.85, 0.90, 0.60, argus=0.8125, interval=(0.80, 0.83)),
            "small": model(0.70, 0.80, 0.92, 0.90, argus=0.8050, interval=(0.79, 0.82)),
            "tiny": model(0.40, 0.70, 0.60, 1.00, argus=0.6750, interval=(0.66, 0.69)),
        },
        efficiency={
            "big": profile(140.0, 6000.0),
            "small": profile(40.0, 1800.0),
            "tiny": profile(10.0, 500.0),
        },
        pairwise=shares(["big", "small", "tiny"], 0.97),
    )


def test_no_constraints_follows_the_runs_argus_and_its_bootstrap() -> None:
    advice = advise(_capable_vs_small(), Constraints())
    assert advice.winner == "big"
    assert advice.runner_up == "small"
    assert advice.ranking == ["big", "small", "tiny"]
    assert advice.own_weights
    assert not advice.tie
    assert advice.confidence is not None and advice.confidence.share == pytest.approx(0.97)
    assert "gives up no capability" in advice.sentences[0]
    assert (
        advice.sentences[-1] == "The bootstrap puts big above the runner-up small in 97 % of 1000 resamples."
    )
    # no limit was asked: two sentences, none about exclusions
    assert len(advice.sentences) == 2


def test_a_constraint_that_excludes_the_most_capable_model_changes_the_answer() -> None:
    advice = advise(_capable_vs_small(), Constraints(label="a 4 GB box", max_memory_gb=4.0))
    assert advice.winner == "small"
    assert advice.most_capable == "big"
    assert advice.ranking == ["small", "tiny"]
    first, excluded, sure = advice.sentences
    assert first.startswith("For a 4 GB box, recommend small (ARGUS 0.805 with the run's weights)")
    assert "against big, the most capable model (P 0.900), which the constraints exclude" in first
    assert "it gives up 0.200 in P for RR +0.020, E +0.300, latency 40 ms against 140 ms" in first
    # 6000 MiB = 6.29 GB against the 4 GB limit
    assert excluded == (
        "Excluded: big (memory 6.29 GB (measured) > 4.00 GB limit (--max-memory-gb), 57 % over)."
    )
    assert sure == "The bootstrap puts small above the runner-up tiny in 97 % of 1000 resamples."


def test_latency_and_rr_limits_name_figure_and_limit() -> None:
    advice = advise(_capable_vs_small(), Constraints(max_latency_ms=100.0, min_rr=0.7))
    assert advice.winner == "small"
    by_name = {c.name: c for c in advice.candidates}
    assert [v.constraint for v in by_name["big"].violations] == ["latency"]
    assert [v.constraint for v in by_name["tiny"].violations] == ["RR"]
    assert (
        "big (latency 140 ms (measured) > 100 ms limit (--max-latency-ms), 40 % over)" in advice.sentences[1]
    )
    assert "tiny (RR 0.600 < 0.700 limit (--min-rr), 14 % under)" in advice.sentences[1]
    assert (
        advice.sentences[2] == "small is the only model that meets the constraints, so there is no runner-up."
    )


def _close_pair(share: float, a_iv: tuple[float, float], b_iv: tuple[float, float]) -> dict[str, object]:
    return results(
        {
            "a": model(0.80, 0.80, 0.80, 0.80, argus=0.801, interval=a_iv),
            "b": model(0.79, 0.80, 0.80, 0.80, argus=0.799, interval=b_iv),
        },
        pairwise={"a": {"b": share}, "b": {"a": 1.0 - share}},
    )


def test_a_tie_within_the_intervals_is_said_as_a_tie() -> None:
    advice = advise(_close_pair(0.52, (0.78, 0.82), (0.77, 0.81)), Constraints())
    assert advice.tie
    assert advice.winner == "a" and advice.runner_up == "b"
    assert advice.sentences[-1] == (
        "a and b are tied within the intervals (ARGUS [0.780, 0.820] against [0.770, 0.810], "
        "a above in 52 % of 1000 resamples); pick between them on the other figures."
    )
    assert advice.to_json()["tie"] is True


@pytest.mark.parametrize(
    ("share", "a_iv", "b_iv"),
    [
        (0.95, (0.78, 0.82), (0.77, 0.81)),  # the claim level itself is enough, overlapping intervals or not
        (0.99, (0.80, 0.82), (0.77, 0.79)),
    ],
)
def test_winner_stated_above_only_at_the_claim_level(
    share: float, a_iv: tuple[float, float], b_iv: tuple[float, float]
) -> None:
    advice = advise(_close_pair(share, a_iv, b_iv), Constraints())
    assert not advice.tie
    assert "tied" not in " ".join(advice.sentences)
    assert f"in {100 * share:.0f} % of 1000 resamples" in advice.sentences[-1]


@pytest.mark.parametrize("share", [0.94, 0.61, 0.39])
def test_below_the_claim_level_the_pair_is_tied(share: float) -> None:
    # 0.61 was "a above b" under the old [0.4, 0.6] band; a 61 % share is not a supported claim
    advice = advise(_close_pair(share, (0.80, 0.82), (0.77, 0.79)), Constraints())
    assert advice.tie
    assert "tied" in advice.sentences[-1]


def test_no_model_satisfies_lists_the_closest_misses() -> None:
    advice = advise(_capable_vs_small(), Constraints(label="strict", max_latency_ms=30.0, min_rr=0.91))
    assert advice.winner is None and advice.runner_up is None and advice.confidence is None
    # tiny: RR 0.60 vs 0.91 (34 % under); small: latency 40 vs 30 (33 % over); big: latency 367 %, RR 1 %
    assert advice.closest_misses == ["small", "tiny", "big"]
    head, misses = advice.sentences
    assert head == "No model satisfies the constraints for strict."
    assert misses.startswith(
        "Closest misses: small: latency 40 ms (measured) > 30 ms limit (--max-latency-ms), 33 % over | "
        "tiny: RR 0.600 < 0.910 limit (--min-rr), 34 % under | big: latency 140 ms"
    )
    assert (
        "big: latency 140 ms (measured) > 30 ms limit (--max-latency-ms), 367 % over; RR 0.900 < 0.910"
        in misses
    )
    assert advice.to_json()["winner"] is None


def test_custom_weights_recompute_argus_and_say_no_bootstrap_probability() -> None:
    data = _capable_vs_small()
    advice = advise(data, Constraints(weights=(0.0, 0.0, 0.0, 1.0)))
    assert not advice.own_weights
    assert advice.ranking == ["tiny", "small", "big"]  # E alone
    assert advice.weights == {"P": 0.0, "CDC": 0.0, "RR": 0.0, "E": 1.0}
    scores = {c.name: c.score for c in advice.candidates}
    assert scores == {"big": 0.6, "small": 0.9, "tiny": 1.0}
    assert "with weights P 0.00, CDC 0.00, RR 0.00, E 1.00" in advice.sentences[0]
    assert advice.confidence is not None and advice.confidence.share is None
    assert advice.sentences[-1] == (
        "tiny leads the runner-up small by 0.100 in point value, which is not a supported claim: no "
        "bootstrap probability is available because the bootstrap shares in results.json are for the "
        "run's own weights."
    )


def test_weights_equal_to_the_runs_after_normalising_are_the_runs_own() -> None:
    advice = advise(_capable_vs_small(), Constraints(weights=(2.0, 2.0, 2.0, 2.0)))
    assert advice.own_weights
    assert advice.confidence is not None and advice.confidence.share == pytest.approx(0.97)


def test_custom_weights_renormalise_over_defined_terms() -> None:
    data = results(
        {
            "noeff": model(0.9, 0.5, 0.5, None),  # E undefined: score = P alone under (0.5, 0, 0, 0.5)
            "both": model(0.6, 0.5, 0.5, 0.8),
        }
    )
    advice = advise(data, Constraints(weights=(0.5, 0.0, 0.0, 0.5)))
    by_name = {c.name: c for c in advice.candidates}
    assert by_name["noeff"].score == pytest.approx(0.9)
    assert by_name["noeff"].score_left_out == {"E": "E undefined in this test"}
    assert by_name["both"].score == pytest.approx(0.7)
    assert advice.winner == "noeff"


def test_equal_point_scores_under_custom_weights_are_a_tie() -> None:
    data = results({"a": model(0.8, 0.1, 0.2, 0.3), "b": model(0.8, 0.9, 0.9, 0.9)})
    advice = advise(data, Constraints(weights=(1.0, 0.0, 0.0, 0.0)))
    assert advice.tie
    assert "a and b are tied within the intervals (equal point values 0.800)" in advice.sentences[-1]


def test_task_restricts_p_to_that_tasks_cells() -> None:
    data = results(
        {
            "ret": model(0.6, 0.8, 0.8, 0.8, per_task={"retrieval": 0.9, "reasoning": 0.3}),
            "rea": model(0.7, 0.8, 0.8, 0.8, per_task={"retrieval": 0.5, "reasoning": 0.9}),
            "cap": model(0.5, 0.8, 0.8, 0.8, per_task={"captioning": 0.5}),
        }
    )
    overall = advise(data, Constraints(weights=(1.0, 0.0, 0.0, 0.0)))
    assert overall.winner == "rea"
    on_retrieval = advise(data, Constraints(weights=(1.0, 0.0, 0.0, 0.0), task="retrieval"))
    assert on_retrieval.winner == "ret"
    assert on_retrieval.most_capable == "ret"
    assert not on_retrieval.own_weights  # P differs from the run's, so its bootstrap does not apply
    cap = next(c for c in on_retrieval.candidates if c.name == "cap")
    assert cap.violations[0].describe() == "task: not run on task 'retrieval' (--task)"
    assert "P on retrieval" in on_retrieval.sentences[0]


def test_task_without_per_task_detail_says_it_cannot() -> None:
    advice = advise(_capable_vs_small(), Constraints(task="retrieval"))
    assert advice.winner == "big"
    assert advice.own_weights  # P stayed the overall P, so the run's ARGUS and bootstrap still apply
    assert advice.notes[0].startswith(
        "P cannot be restricted to task 'retrieval': results.json has no per-task"
    )


def test_per_task_falls_back_to_clean_scorecard_cells() -> None:
    data = results({"a": model(0.5, 0.5, 0.5, 0.5), "b": model(0.6, 0.5, 0.5, 0.5)})
    data["scorecard_cells"] = [
        scorecard_cell("a", "retrieval", "d1", 0.8),
        scorecard_cell("a", "retrieval", "d2", 0.6),
        # as scoring writes a perturbed cell: its perturbation and severity beside the condition
        {
            **scorecard_cell("a", "retrieval", "d1", 0.1),
            **{"condition": "image:fog@3", "perturbation": "image:fog", "severity": 3},
        },
        scorecard_cell("b", "retrieval", "d1", 0.5),
    ]
    advice = advise(data, Constraints(weights=(1.0, 0.0, 0.0, 0.0), task="retrieval"))
    assert {c.name: c.p for c in advice.candidates} == {"a": pytest.approx(0.7), "b": pytest.approx(0.5)}
    assert advice.winner == "a"


def test_a_device_other_than_the_measuring_hardware_uses_labelled_roofline_estimates() -> None:
    data = results(
        {"m": model(0.8, 0.8, 0.8, 0.8), "n": model(0.7, 0.7, 0.7, 0.7)},
        efficiency={
            # measured on an H200: 2e11 FLOPs, 1e8 float32 parameters
            "m": profile(5.0, 1000.0, flops=2 * 10**11, params=10**8),
            "n": profile(5.0, 1000.0, flops=2 * 10**9, params=10**8),
        },
    )
    advice = advise(data, Constraints(device="jetson-nano", max_latency_ms=500.0))
    by_name = {c.name: c for c in advice.candidates}
    lat = by_name["m"].figures.latency_ms
    # Jetson Nano: 236 GFLOP/s FP32 and 25.6 GB/s: max(2e11 / 236e9, 4e8 / 25.6e9) s = 847.46 ms
    assert lat.source == "estimate"
    assert lat.value == pytest.approx(2e11 / 236e9 * 1000)
    assert by_name["m"].figures.memory_gb.source == "estimate"
    assert advice.winner == "n"
    assert "m (latency 847 ms (estimate) > 500 ms limit (--max-latency-ms), 69 % over)" in advice.sentences[1]
    assert any("estimates, not measurements" in n for n in advice.notes)
    assert any("E is the run's measured efficiency axis" in n for n in advice.notes)


def test_a_device_matching_the_runs_fingerprint_uses_measured_figures() -> None:
    data = results(
        {"m": model(0.8, 0.8, 0.8, 0.8)},
        efficiency={"m": profile(31.0, 900.0, gpu="NVIDIA H100 80GB HBM3")},
    )
    advice = advise(data, Constraints(device="h100-sxm", max_latency_ms=100.0))
    fig = advice.candidates[0].figures.latency_ms
    assert (fig.value, fig.source) == (31.0, "measured")
    assert "which is h100-sxm" in fig.note
    assert not any("estimates" in n for n in advice.notes)


def test_device_memory_excludes_a_model_that_does_not_fit() -> None:
    data = results(
        {"big": model(0.9, 0.8, 0.8, 0.8), "small": model(0.5, 0.8, 0.8, 0.8)},
        efficiency={"big": profile(5.0, 5000.0), "small": profile(5.0, 900.0)},
    )
    advice = advise(data, Constraints(device="jetson-nano"))
    assert advice.winner == "small"
    assert (
        "big (device memory 5.24 GB (estimate) > 4.00 GB limit (--device), 31 % over)" in advice.sentences[1]
    )


def test_a_projection_without_a_flop_count_excludes_only_under_a_latency_limit() -> None:
    data = results(
        {"m": model(0.9, 0.8, 0.8, 0.8), "n": model(0.5, 0.8, 0.8, 0.8)},
        efficiency={"m": profile(5.0, 900.0, flops=None), "n": profile(5.0, 900.0)},
    )
    assert advise(data, Constraints(device="raspberry-pi-5")).winner == "m"
    advice = advise(data, Constraints(device="raspberry-pi-5", max_latency_ms=5000.0))
    assert advice.winner == "n"
    assert (
        "m (latency unknown (cannot project latency onto raspberry-pi-5: no FLOP count)"
        in advice.sentences[1]
    )


def test_a_model_without_a_profile_is_excluded_by_a_latency_limit_with_the_reason() -> None:
    data = results(
        {"m": model(0.9, 0.8, 0.8, None), "n": model(0.5, 0.8, 0.8, 0.8)},
        efficiency={"m": None, "n": profile(5.0, 900.0)},
    )
    advice = advise(data, Constraints(max_latency_ms=50.0))
    assert advice.winner == "n"
    assert "m (latency unknown (no efficiency profile for this model in results.json" in advice.sentences[1]


def test_standard_profiles_cover_server_edge_and_cpu_board() -> None:
    profiles = standard_profiles()
    assert [p.device for p in profiles] == ["h100-sxm", "jetson-nano", "raspberry-pi-5"]
    assert all(p.max_latency_ms is not None and p.max_memory_gb is not None for p in profiles)
    data = _capable_vs_small()
    advice = [advise(data, p) for p in profiles]
    for a, p in zip(advice, profiles, strict=True):
        assert a.sentences[0].startswith(f"For {p.label}, recommend ")
    assert advice[0].winner == "big"  # roofline on an H100 is fast: nothing excluded
    assert advice[1].winner == "small"  # 6 GB does not fit a 4 GB Jetson Nano
    # the explicit 4 GB limit equals the device memory: the miss is said once, not twice
    assert advice[1].sentences[1] == (
        "Excluded: big (memory 6.29 GB (estimate) > 4.00 GB limit (--max-memory-gb), 57 % over)."
    )


def test_to_json_is_plain_and_deterministic() -> None:
    a = advise(_capable_vs_small(), Constraints(device="jetson-nano", max_latency_ms=100.0))
    b = advise(_capable_vs_small(), Constraints(device="jetson-nano", max_latency_ms=100.0))
    text = json.dumps(a.to_json(), sort_keys=True, allow_nan=False)
    assert text == json.dumps(b.to_json(), sort_keys=True, allow_nan=False)
    out = json.loads(text)
    assert out["constraints"]["device"] == "jetson-nano"
    assert out["sentences"] == a.sentences
    assert {c["model"] for c in out["candidates"]} == {"big", "small", "tiny"}

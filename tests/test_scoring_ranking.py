"""Rankings, rank shifts, Kendall's tau and the gap sentence."""

from __future__ import annotations

import pytest

from argus_eval.scoring.ranking import compare_rankings, gap_sentence, ordinal, rank_models


def test_rank_models_competition_ranks_and_unranked() -> None:
    assert rank_models({"a": 0.5, "b": 0.9, "c": 0.5, "d": None, "e": 0.1}) == {
        "a": 2,
        "b": 1,
        "c": 2,
        "d": None,
        "e": 4,
    }


def test_ordinals() -> None:
    assert [ordinal(i) for i in (1, 3, 10, 11, 12, 13, 21, 22, 23, 111)] == [
        "first", "third", "tenth", "11th", "12th", "13th", "21st", "22nd", "23rd", "111th",
    ]  # fmt: skip
    assert ordinal(2, tied=True) == "joint second"


def test_shift_and_kendall_tau_hand_values() -> None:
    # capability A > B > C; overall B > A > C: pairs (A,C), (B,C) concordant, (A,B) discordant -> 1/3
    cmp = compare_rankings({"A": 0.9, "B": 0.8, "C": 0.1}, {"A": 0.7, "B": 0.75, "C": 0.2})
    assert cmp.capability == {"A": 1, "B": 2, "C": 3}
    assert cmp.overall == {"A": 2, "B": 1, "C": 3}
    assert cmp.shift == {"A": -1, "B": 1, "C": 0}
    assert cmp.kendall_tau == pytest.approx(1 / 3)
    assert cmp.sentence == "A ranks first on capability but second overall; B leads overall."


def test_paper_like_gap_third_overall() -> None:
    cap = {"Qwen": 0.9, "Gemma": 0.85, "CLIP": 0.6}
    overall = {"Qwen": 0.5, "Gemma": 0.89, "CLIP": 0.7}
    cmp = compare_rankings(cap, overall)
    assert cmp.sentence == "Qwen ranks first on capability but third overall; Gemma leads overall."
    assert cmp.kendall_tau == pytest.approx(-1 / 3)  # one concordant pair (Gemma, CLIP) of three


def test_agreeing_rankings() -> None:
    cmp = compare_rankings({"A": 0.9, "B": 0.5}, {"A": 0.8, "B": 0.4})
    assert cmp.sentence == "The capability and overall rankings agree: A leads on both."
    assert cmp.kendall_tau == pytest.approx(1.0)
    assert cmp.shift == {"A": 0, "B": 0}


def test_leader_keeps_lead_but_others_move() -> None:
    cmp = compare_rankings({"A": 0.9, "B": 0.8, "C": 0.7}, {"A": 0.9, "B": 0.1, "C": 0.5})
    assert cmp.sentence == (
        "A leads on both capability and overall; B moves from second on capability to third overall."
    )


def test_single_model_and_none() -> None:
    assert compare_rankings({"A": 0.5}, {"A": 0.4}).sentence == (
        "Only A was ranked, so there is no ranking to compare."
    )
    assert compare_rankings({"A": 0.5}, {"A": 0.4}).kendall_tau is None
    assert gap_sentence({}, {}).startswith("No model has both")


def test_ties() -> None:
    cmp = compare_rankings({"A": 0.9, "B": 0.9, "C": 0.5}, {"A": 0.6, "B": 0.8, "C": 0.8})
    assert cmp.capability == {"A": 1, "B": 1, "C": 3}
    assert cmp.overall == {"A": 3, "B": 1, "C": 1}
    assert (
        cmp.sentence
        == "A ranks joint first on capability but third overall; B and C tie for the lead overall."
    )
    tied_all = compare_rankings({"A": 0.5, "B": 0.5}, {"A": 0.5, "B": 0.5})
    assert tied_all.sentence == "The capability and overall rankings agree: A and B tie for the lead on both."
    assert tied_all.kendall_tau is None  # tau is undefined when every rank is tied


def test_unranked_model_is_named() -> None:
    cmp = compare_rankings({"A": 0.9, "B": 0.5, "C": None}, {"A": 0.8, "B": 0.4, "C": None})
    assert cmp.sentence.endswith("(C could not be ranked on both.)")
    assert cmp.shift["C"] is None

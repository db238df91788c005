"""VQA, CLEVR and VCR scoring against hand-computed cases from the official evaluation's rules."""

from __future__ import annotations

import pytest

from argus_eval.errors import MetricError
from argus_eval.metrics.vqa import (
    accuracy_by_group,
    exact_match,
    normalize_answer,
    vcr_scores,
    vqa_accuracy,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Two", "2"),
        ("  the Dog\n", "dog"),
        ("A red car.", "red car"),
        ("dont", "don't"),
        ("isnt it", "isn't it"),
        ("yes!", "yes"),
        ("black/white", "black white"),  # '/' not next to a space -> replaced by a space
        ("black / white", "black white"),  # '/' next to a space -> removed
        ("1,000", "1000"),  # comma between digits -> every punctuation mark removed
        ("3.5", "3.5"),  # a period before a digit stays
        ("none", "0"),
        ("an apple", "apple"),
    ],
)
def test_normalize_answer(raw: str, expected: str) -> None:
    assert normalize_answer(raw) == expected


def test_vqa_accuracy_leave_one_out() -> None:
    # 3 of 10 say "2": for the 3 subsets leaving out a "2", 2 matches -> 2/3; for the 7 others, 3 -> 1.
    answers = ["2", "2", "2"] + ["3"] * 7
    assert vqa_accuracy("two", answers) == pytest.approx((3 * (2 / 3) + 7 * 1.0) / 10)
    # 1 match: each subset containing it scores 1/3 (9 of them), the one leaving it out scores 0
    assert vqa_accuracy("3", ["3"] + ["4"] * 9) == pytest.approx(9 * (1 / 3) / 10)
    # 2 matches: 8 subsets with both -> 2/3; 2 subsets with one -> 1/3
    assert vqa_accuracy("yes", ["yes", "yes"] + ["no"] * 8) == pytest.approx((8 * 2 / 3 + 2 * 1 / 3) / 10)
    assert vqa_accuracy("yes", ["yes"] * 10) == 1.0
    assert vqa_accuracy("maybe", ["yes"] * 10) == 0.0
    # gold answers get punctuation processing when annotators disagree
    assert vqa_accuracy("black white", ["black/white"] * 4 + ["black"] * 6) == 1.0
    with pytest.raises(MetricError, match="no gold answers"):
        vqa_accuracy("yes", [])


def test_exact_match_clevr() -> None:
    assert exact_match("Two.", "2")
    assert exact_match("  Yes ", "yes")
    assert exact_match("large  cube!", "large cube")
    assert not exact_match("cube", "cylinder")
    assert not exact_match("3", "2")


def test_accuracy_by_group() -> None:
    out = accuracy_by_group([True, False, True, True], ["count", "count", "exist", "compare"])
    assert out == {"compare": 1.0, "count": 0.5, "exist": 1.0, "overall": 0.75}
    with pytest.raises(MetricError, match="one group per item"):
        accuracy_by_group([True], ["a", "b"])


def test_vcr_scores() -> None:
    out = vcr_scores([0, 1, 2, 3], [0, 1, 0, 3], [1, 1, 1, 0], [1, 0, 1, 0])
    # Q->A right on items 0,1,3; QA->R right on 0,2,3; both on 0,3
    assert out == {"Q->A": 0.75, "QA->R": 0.75, "Q->AR": 0.5}
    with pytest.raises(MetricError, match="equal non-zero lengths"):
        vcr_scores([0], [0, 1], [0], [0])

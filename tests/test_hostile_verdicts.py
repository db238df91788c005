"""Hostile judge verdicts: real-looking judge prose read by the documented rules (tasks/judge_verdicts.py).

Every expected value below is written by hand from the rules, not from the parser's output: a verdict
word under a negation flips, "no"/"right" count only standing alone, both senses are a failure; a score
is a labelled number, a fraction on its own scale, or the only number outside a stated scale's bounds.
"""

from __future__ import annotations

import pytest

from argus_eval.tasks.judge import JudgeOptions, parse_verdict

FAIL = None

YES_NO = [
    ("Yes.", 1.0),
    ("yes", 1.0),
    ("YES", 1.0),
    ("No.", 0.0),
    ("no no no", 0.0),
    ("Correct.", 1.0),
    ("CORRECT", 1.0),
    ("Incorrect.", 0.0),
    ("That is incorrect, sorry", 0.0),
    ("The answer is not correct.", 0.0),
    ("The candidate answer is not quite correct.", 0.0),
    ("The candidate isn't right.", 0.0),
    ("That\u2019s not right.", 0.0),
    ("This is never true.", 0.0),
    ("It is not wrong.", 1.0),
    ("That's right.", 1.0),
    ("Right.", 1.0),
    ("**Yes** - the candidate matches the references.", 1.0),
    ("Verdict: no", 0.0),
    ("Answer: Yes", 1.0),
    ("No, the candidate says blue but the references say red.", 0.0),
    ("There is no match, so it is wrong.", 0.0),
    ("There is no doubt: correct.", 1.0),
    ("The cube is right of the sphere, which is correct.", 1.0),
    ("Yes, the answer is correct.", 1.0),
    ("No, it is wrong.", 0.0),
    ("False.", 0.0),
    ("True", 1.0),
    ("Yes and no.", FAIL),
    ("yes/no", FAIL),
    ("Correct? No.", FAIL),
    ("It is correct, but also wrong in parts.", FAIL),
    ("I'm not sure.", FAIL),
    ("The answer mentions a red cube on the right of the sphere", FAIL),
    ("gray", FAIL),
    ("1", FAIL),
    ("", FAIL),
    ("nowhere yesterday", FAIL),
    ("The answer is right because it names the cube", FAIL),
]

SCORES = [
    ("8", 0.8),
    ("0", 0.0),
    ("2.5", 0.25),
    ("10", 1.0),
    ("Score: 7/10", 0.7),
    ("Score: 10/10", 1.0),
    ("I give it 7/10.", 0.7),
    ("10 out of 10", 1.0),
    ("3 out of 5", 0.6),
    ("Score: 7", 0.7),
    ("score = 4", 0.4),
    ("Rating of 9.", 0.9),
    ("My grade is 6", 0.6),
    ("On a scale of 0 to 10, I give 7.", 0.7),
    ("On a scale from 1 to 10 this deserves 8", 0.8),
    ("scale of 0-10: 8", 0.8),
    ("Between 0 and 10, it is a 3.", 0.3),
    ("The answer gets score: 5 (5/10).", 0.5),
    ("11", FAIL),
    ("-1", FAIL),
    ("12/10", FAIL),
    ("Score: 7 (8/10)", FAIL),
    ("The candidate lists 3 cubes and 2 spheres.", FAIL),
    ("7 and 8", FAIL),
    ("none", FAIL),
    ("On a scale of 0 to 10.", FAIL),
    ("5/0", FAIL),
]


@pytest.mark.parametrize(("raw", "expected"), YES_NO)
def test_yes_no_verdicts(raw: str, expected: float | None) -> None:
    v = parse_verdict(raw, JudgeOptions(model="zoo:gemma3"))
    assert v.raw == raw
    assert v.score == expected, v.error
    if expected is None:
        assert v.error is not None and v.error.startswith("judge: verdict ") and repr(raw[:60]) in v.error
    else:
        assert v.error is None


@pytest.mark.parametrize(("raw", "expected"), SCORES)
def test_score_verdicts(raw: str, expected: float | None) -> None:
    v = parse_verdict(raw, JudgeOptions(model="zoo:gemma3", verdict="score", score_max=10))
    assert v.score == (None if expected is None else pytest.approx(expected)), v.error
    assert (v.error is None) == (expected is not None)


def test_table_is_large_enough() -> None:
    assert len(YES_NO) + len(SCORES) >= 40 and len(YES_NO) >= 20 and len(SCORES) >= 20


def test_a_new_reader_rejudges_cached_verdicts() -> None:
    """The reader's version is in the judge's fingerprint: verdicts cached under an older reading are
    judged again rather than kept with a score the documented rules would not give."""
    settings = JudgeOptions(model="zoo:gemma3").parse_settings()
    assert settings["parser"] >= 2

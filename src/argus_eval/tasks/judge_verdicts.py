"""Reading a judge's raw text as a verdict: a clear yes/no, or a score on a stated scale; else a failure.

A judge is a language model and answers in prose, so its verdict is read, not its first word:

- ``yes_no``: the verdict words are yes/no, correct/incorrect, true/false and right/wrong. A word under a
  negation ("not correct", "isn't right", "never true") counts with the opposite sense. "no" and "right"
  count only where they stand alone (at the start or end of a clause, next to punctuation), so "there is
  no match" and "right of the cube" are not verdicts. Every verdict word must agree; "yes and no",
  "correct? no", or no verdict word at all is a judge failure carrying the raw text.
- ``score``: a labelled score ("score: 7", "rating of 7", "grade = 7"), else a fraction ("7/10",
  "7 out of 10"), else the text's only number once the bounds of a stated scale ("on a scale of 0 to
  10", "from 1 to 5", "between 0 and 10") are set aside. A fraction is read on its own scale (N/M); a
  bare or labelled number on score_max. Readings that disagree, several candidate numbers, or a value
  outside its scale are a failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

# Bumped whenever a raw text may read differently: part of the judge's fingerprint, so cached verdicts
# parsed by an older reader are judged again.
PARSER_VERSION = 2

_POSITIVE = frozenset({"yes", "correct", "true", "right"})
_NEGATIVE = frozenset({"no", "incorrect", "false", "wrong"})
_STANDALONE_ONLY = frozenset({"no", "right"})  # also a determiner / a direction in ordinary prose
_NEGATORS = frozenset({"not", "never", "hardly", "isn't", "isnt", "aren't", "wasn't", "doesn't", "don't",
                       "ain't", "is'nt", "cannot", "can't"})  # fmt: skip
_NEGATION_REACH = 2  # "not correct", "not quite correct", "isn't entirely right"
_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?|[.,;:!?()\[\]\"/\n-]")
_CLAUSE_MARK = frozenset('.,;:!?()[]"/\n-')

_NUM = r"[-+]?\d+(?:\.\d+)?"
_END = r"(?!\d)(?!\.\d)"  # a whole number ends here (a sentence's full stop may follow)
_LABEL = r"\b(?:score|rating|grade|mark)\b\s*(?:is|of|:|=)?\s*:?\s*"
_LABELLED = re.compile(rf"{_LABEL}({_NUM}){_END}(?!\s*(?:/|out\s+of))", re.IGNORECASE)
_FRACTION = re.compile(rf"(?<![\w.])({_NUM})\s*(?:/|out\s+of)\s*({_NUM}){_END}", re.IGNORECASE)
_SCALE = re.compile(
    rf"\b(?:scale\s+of|from|between)\s+({_NUM})(?:\s+(?:to|and)\s+|\s*-\s*)({_NUM}){_END}", re.IGNORECASE
)
_NUMBER = re.compile(rf"(?<![\w.]){_NUM}{_END}")


@dataclass(frozen=True)
class Verdict:
    """A parsed verdict in [0, 1], or why the raw text does not parse (a judge failure)."""

    raw: str
    score: float | None
    error: str | None = None


def read_verdict(raw: str, kind: Literal["yes_no", "score"], score_max: float) -> Verdict:
    """The verdict in a judge's raw text, by the rules of this module's docstring."""
    value, why = _yes_no(raw) if kind == "yes_no" else _score(raw, score_max)
    if value is None:
        return Verdict(raw, None, f"judge: verdict {raw[:60]!r} {why}")
    return Verdict(raw, value)


def _yes_no(raw: str) -> tuple[float | None, str]:
    tokens = _TOKEN.findall(raw.lower().replace("\u2019", "'"))
    senses: set[float] = set()
    for i, tok in enumerate(tokens):
        if tok not in _POSITIVE and tok not in _NEGATIVE:
            continue
        if tok in _STANDALONE_ONLY and not _standalone(tokens, i):
            continue
        sense = 1.0 if tok in _POSITIVE else 0.0
        if _negated(tokens, i):
            sense = 1.0 - sense
        senses.add(sense)
    if len(senses) == 1:
        return senses.pop(), ""
    return None, "has no yes/no verdict" if not senses else "says both yes and no"


def _standalone(tokens: list[str], i: int) -> bool:
    before = tokens[i - 1] if i > 0 else "."
    after = tokens[i + 1] if i + 1 < len(tokens) else "."
    return before in _CLAUSE_MARK or after in _CLAUSE_MARK


def _negated(tokens: list[str], i: int) -> bool:
    for tok in reversed(tokens[max(0, i - _NEGATION_REACH) : i]):
        if tok in _CLAUSE_MARK:
            return False
        if tok in _NEGATORS:
            return True
    return False


def _score(raw: str, score_max: float) -> tuple[float | None, str]:
    readings: set[float] = set()
    for m in _LABELLED.finditer(raw):
        readings.add(_on_scale(float(m.group(1)), score_max))
    for m in _FRACTION.finditer(raw):
        readings.add(_on_scale(float(m.group(1)), float(m.group(2))))
    if not readings:
        bounds = {m.span(g) for m in _SCALE.finditer(raw) for g in (1, 2)}
        numbers = [m for m in _NUMBER.finditer(raw) if m.span() not in bounds]
        if not numbers:
            return None, "has no score"
        if len({float(m.group(0)) for m in numbers}) > 1:
            return (
                None,
                f"has several numbers ({', '.join(m.group(0) for m in numbers[:4])}) and no labelled score",
            )
        readings.add(_on_scale(float(numbers[0].group(0)), score_max))
    if len(readings) > 1:
        return None, "gives scores that disagree"
    value = readings.pop()
    if not 0.0 <= value <= 1.0:
        return None, f"has a score outside [0, {score_max:g}]"
    return value, ""


def _on_scale(value: float, top: float) -> float:
    """value / top, or a value marked out of range (never a division by a zero bound)."""
    return value / top if top > 0 else float("inf")

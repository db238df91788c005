"""Answer types of closed-form questions: which candidate answers a question can have.

A question's answer type comes from its content: an explicit metadata["answer_type"] (VQA v2's
yes/no, number, other) or the answer-producing function of a CLEVR-style program
(metadata["question_type"]: exist and the comparisons answer yes/no, count a number, query_<attr> a
value of that attribute). Scoring a "What colour ...?" question against shapes and numbers would make a
substitute protocol fail for a reason that has nothing to do with the model, and would put its chance
level at 1/28 instead of 1/8.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from argus_eval.data.clevr.vocab import ATTRIBUTES, MAX_COUNT, VALUES
from argus_eval.data.types import Sample

YES_NO = ("yes", "no")
NUMBERS = tuple(str(i) for i in range(MAX_COUNT + 1))

# answer type -> the values it admits (within the dataset's closed vocabulary)
TYPE_VALUES: dict[str, tuple[str, ...]] = {
    "yes/no": YES_NO,
    "number": NUMBERS,
    **{a: VALUES[a] for a in ATTRIBUTES},
}

# CLEVR answer-producing function -> answer type
FUNCTION_TYPES: dict[str, str] = {
    "exist": "yes/no",
    "count": "number",
    "equal_integer": "yes/no",
    "less_than": "yes/no",
    "greater_than": "yes/no",
    **{f"equal_{a}": "yes/no" for a in ATTRIBUTES},
    **{f"query_{a}": a for a in ATTRIBUTES},
}


def answer_type(sample: Sample) -> str | None:
    """The sample's answer type, or None when its metadata says nothing about it."""
    explicit = sample.metadata.get("answer_type")
    if isinstance(explicit, str) and explicit:
        return explicit
    return FUNCTION_TYPES.get(str(sample.metadata.get("question_type", "")))


_NUMBER_WORDS = frozenset(
    {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}
)


def vqa_answer_type(answers: Sequence[str]) -> str:
    """The answer type VQA v2 gives a question, from its gold answers: that of the most common one
    (first of the most common, as listed), "yes/no" for yes or no, "number" for a whole number (digits or
    a number word), else "other". For layouts that carry no answer type (a VLMEvalKit TSV), so that the
    same questions get the same type, and the same answer-format rate, in every layout."""
    words = [a.strip().lower().rstrip(".").strip() for a in answers]
    top = Counter(words).most_common(1)[0][0] if words else ""
    if top in YES_NO:
        return "yes/no"
    if top.isdigit() or top in _NUMBER_WORDS:
        return "number"
    return "other"


def typed_candidates(sample: Sample, vocab: tuple[str, ...]) -> tuple[str, ...]:
    """The answers a question can have: its own choices; else the closed vocabulary restricted to its
    answer type ("other" excludes yes/no and numbers); the whole vocabulary when the type is unknown or
    restricts it to nothing."""
    if sample.choices:
        return sample.choices
    kind = answer_type(sample)
    if kind is None or not vocab:
        return vocab
    if kind in TYPE_VALUES:
        allowed = set(TYPE_VALUES[kind])
        kept = tuple(v for v in vocab if v in allowed)
    else:  # an open type such as VQA's "other": everything that is not yes/no or a number
        closed = set(YES_NO) | set(NUMBERS)
        kept = tuple(v for v in vocab if v not in closed)
    return kept or vocab

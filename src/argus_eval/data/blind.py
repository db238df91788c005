"""The blind baseline: answer every question without its image, from training-split answers alone.

A training answer is either the answer text (open-ended QA: CLEVR, VQA) or, for multiple-choice items whose
options are written per question (VCR), the position of the right option; Dataset.train_prior.form says
which, and the same prior rule applies to both.

The prior is the most frequent training answer of the question's (family, question type); an unseen pair
falls back to its question type (CLEVR's "Q-type mode" prior: count -> "1", exist -> "no"), then to its
family, then to the most frequent answer overall. The most specific level comes first because a coarse
family (e.g. zero_hop mixes colour, shape and size queries) would understate the language prior. What it
scores on test questions is what a model that never looks at the image could reach.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from argus_eval.data.types import Dataset, Sample

# Fallback levels, most specific first.
LEVELS = ("family+type", "question_type", "family", "overall")


def _most_frequent(counts: Counter[str]) -> str:
    # Ties broken by the answer text, so the prior never depends on the order of the training file.
    return min(counts, key=lambda a: (-counts[a], a))


@dataclass(frozen=True)
class BlindPrior:
    """Most frequent training answer per (family, type), per question type, per family, and overall."""

    by_pair: Mapping[tuple[str, str], str]
    by_family: Mapping[str, str]
    by_type: Mapping[str, str]
    overall: str

    def answer(self, family: str | None, question_type: str | None) -> tuple[str, str]:
        """(answer, level it came from) for a question of this family and type."""
        if family is not None and question_type is not None and (family, question_type) in self.by_pair:
            return self.by_pair[(family, question_type)], "family+type"
        if question_type is not None and question_type in self.by_type:
            return self.by_type[question_type], "question_type"
        if family is not None and family in self.by_family:
            return self.by_family[family], "family"
        return self.overall, "overall"


def blind_prior(train_answers: Iterable[tuple[str, str, str]]) -> BlindPrior | None:
    """The prior from (family, question_type, answer) triples; None when there are none."""
    pair: dict[tuple[str, str], Counter[str]] = {}
    fam: dict[str, Counter[str]] = {}
    typ: dict[str, Counter[str]] = {}
    overall: Counter[str] = Counter()
    for family, qtype, answer in train_answers:
        pair.setdefault((family, qtype), Counter())[answer] += 1
        fam.setdefault(family, Counter())[answer] += 1
        typ.setdefault(qtype, Counter())[answer] += 1
        overall[answer] += 1
    if not overall:
        return None
    return BlindPrior(
        {k: _most_frequent(c) for k, c in pair.items()},
        {f: _most_frequent(c) for f, c in fam.items()},
        {t: _most_frequent(c) for t, c in typ.items()},
        _most_frequent(overall),
    )


@dataclass(frozen=True)
class BlindAnswers:
    """The blind answer of each sample (in order) and how many answers came from each fallback level;
    or, when the baseline does not apply, why."""

    answers: list[str]
    levels: dict[str, int]
    skipped: str | None = None


@dataclass(frozen=True)
class AnswerForm:
    """How a prior answer becomes an item's answer under one TrainPrior.form."""

    applies: Callable[[Sample], bool]
    not_applicable: str
    pick: Callable[[Sample, str], str]
    rule: str


def _option_at(sample: Sample, index: str) -> str:
    # The training prior names a position; an item with fewer options has no answer there (scored wrong).
    i = int(index)
    return sample.choices[i] if 0 <= i < len(sample.choices) else ""


FORMS: dict[str, AnswerForm] = {
    "text": AnswerForm(
        lambda s: not s.choices,
        "multiple-choice items: a prior over training answers does not apply",
        lambda s, a: a,
        "most frequent training answer per family and question type (then broader)",
    ),
    "option_index": AnswerForm(
        lambda s: bool(s.choices),
        "open-ended items: a prior over option positions does not apply",
        _option_at,
        "most frequent position of the right option per family and question type (then broader)",
    ),
}


def blind_answers(dataset: Dataset, samples: Sequence[Sample]) -> BlindAnswers:
    """Blind answers for samples of dataset, or a named reason why there is no blind baseline."""
    train = dataset.train_prior
    form = FORMS[train.form]
    if not all(form.applies(s) for s in samples):
        return BlindAnswers([], {}, form.not_applicable)
    if train.withheld is not None:
        return BlindAnswers([], {}, f"dataset {dataset.name!r}: {train.withheld}")
    prior = blind_prior(train.answers)
    if prior is None:
        return BlindAnswers([], {}, f"dataset {dataset.name!r} carries no training-split answers")
    levels = dict.fromkeys(LEVELS, 0)
    answers = []
    for s in samples:
        family, qtype = s.metadata.get("family"), s.metadata.get("question_type")
        answer, level = prior.answer(
            None if family is None else str(family), None if qtype is None else str(qtype)
        )
        answers.append(form.pick(s, answer))
        levels[level] += 1
    return BlindAnswers(answers, levels)


def baseline_source(dataset: Dataset) -> str:
    """Where a dataset's blind baseline comes from, or why it has none (for the plan and the report)."""
    train = dataset.train_prior
    if train.withheld is not None:
        return train.withheld
    if train.answers:
        where = train.source or "the format's own training split"
        return f"{FORMS[train.form].rule}, from {where}"
    return "not available: this format reads no training split"

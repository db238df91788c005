"""Training-split answers for the blind baseline, from the file a config key names, or why there are none.

Every question-answering loader calls train_prior with its own reader; the rules live here once: no key, no
prior (and the message names the key); the evaluated file itself is never its own prior; a training file
that is malformed, holds no answer, or shares no answer with the evaluated split is a DatasetError naming
the key, because each would otherwise surface as a silent baseline of 0. A training answer that is not
usable text (data/text.py) is left out of the prior.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from argus_eval.data.text import text_problem
from argus_eval.data.types import Sample, TrainAnswers, TrainPrior
from argus_eval.errors import DatasetError


def not_given(key: str) -> str:
    """The blind baseline's reason when the config names no training file."""
    return f"not available: give the training split (key {key})"


def _same_file(a: Path, b: Path) -> bool:
    return a.resolve() == b.resolve()


def _fold(answer: str) -> str:
    return " ".join(answer.lower().split())


def gold_answers(samples: Iterable[Sample], form: str) -> set[str]:
    """The evaluated split's gold answers in the form training answers take (text, or option index)."""
    if form == "option_index":
        return {str(s.answer_index) for s in samples if s.answer_index is not None}
    return {_fold(a) for s in samples if s.question is not None for a in s.answers}


def train_prior(
    dataset: str,
    key: str,
    train: Path | None,
    evaluated: Sequence[Path],
    read: Callable[[Path], TrainAnswers],
    gold: set[str],
) -> TrainPrior:
    """Read the training answers that `key` points at, for a dataset evaluated from `evaluated` files.

    gold: the evaluated split's gold answers (empty for an unlabelled split: nothing to compare with).
    """
    if train is None:
        return TrainPrior(withheld=not_given(key))
    if any(_same_file(train, e) for e in evaluated):
        # A prior fitted on the very answers it is scored on would overstate what a blind model reaches.
        return TrainPrior(
            withheld=f"not available: the evaluated split is the training split ({train}, key {key}), "
            "so no held-out prior exists; evaluate another split"
        )
    try:
        # An answer that is not usable text (a lone surrogate, over the cap) is left out of the pool.
        answers = tuple(t for t in read(train) if all(text_problem(p, "answer") is None for p in t))
    except DatasetError as e:
        raise DatasetError(f"dataset {dataset!r}, key {key}: {e}") from None
    if not answers:
        raise DatasetError(
            f"dataset {dataset!r}, key {key}: {train} holds no answered question; "
            f"point {key} at the benchmark's labelled training split"
        )
    if gold and not {_fold(a) for _, _, a in answers} & gold:
        raise DatasetError(
            f"dataset {dataset!r}, key {key}: the answers of {train} share nothing with the evaluated "
            f"split's gold answers; point {key} at this benchmark's training split"
        )
    return TrainPrior(answers, source=f"{train} (key {key}, {len(answers)} answers)")

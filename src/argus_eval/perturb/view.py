"""What a model sees of a sample under a condition, in one place: every seed a run derives is made here.

A run's inputs are reproducible because each perturbed input has its own seed, derived from the run
seed, the sample and the condition (conditions.derive_seed), with a salt per input: the image, the
question ("#q"), each text ("#text{i}"), and the swap partners of a whole cell ("#partners", over the
dataset's content). The runner prepares inputs, the text gallery and the partners with these functions,
and the report rebuilds a perturbed thumbnail and the question shown with the same ones, so the two can
never disagree on what a model saw.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

from argus_eval.perturb.conditions import Condition, derive_seed
from argus_eval.perturb.kinds import ConditionKind

if TYPE_CHECKING:
    from argus_eval.data.images import ImageArray


def image_seed(run_seed: int, sample_id: str, condition: Condition) -> int:
    """The seed of a sample's image under condition."""
    return derive_seed(run_seed, sample_id, condition.id)


def question_seed(run_seed: int, sample_id: str, condition: Condition) -> int:
    """The seed of a sample's question under condition."""
    return derive_seed(run_seed, f"{sample_id}#q", condition.id)


def text_seed(run_seed: int, sample_id: str, index: int, condition: Condition) -> int:
    """The seed of a sample's text number index (a query or caption) under condition."""
    return derive_seed(run_seed, f"{sample_id}#text{index}", condition.id)


def shown_image(image: ImageArray, sample_id: str, condition: Condition, run_seed: int) -> ImageArray:
    """The image a model sees of sample_id under condition (for a swap, image is the partner's)."""
    return condition.apply_image(image, image_seed(run_seed, sample_id, condition))


def _keeps_texts(condition: Condition) -> bool:
    """Whether the condition's kind leaves every text as it is: it keeps the base apply_text, so no
    seed need be derived (a sha256 per text: samples.jsonl asks for each of a run's lines)."""
    return type(condition.behaviour).apply_text is ConditionKind.apply_text


def shown_question(question: str | None, sample_id: str, condition: Condition, run_seed: int) -> str | None:
    """The question a model is asked of sample_id under condition (None when the sample has none)."""
    if question is None or _keeps_texts(condition):
        return question
    return condition.apply_text(question, question_seed(run_seed, sample_id, condition))


def shown_texts(texts: Sequence[str], sample_id: str, condition: Condition, run_seed: int) -> tuple[str, ...]:
    """A sample's texts (queries, or references a task lets a condition change) under condition."""
    if _keeps_texts(condition):
        return tuple(texts)
    return tuple(
        condition.apply_text(t, text_seed(run_seed, sample_id, i, condition)) for i, t in enumerate(texts)
    )


def partners(
    items: Sequence[tuple[str, Hashable]], dataset_fingerprint: str, condition: Condition, run_seed: int
) -> dict[str, str]:
    """Sample id -> the sample whose image it is shown instead, over a whole cell's (sample id, image)
    pairs: drawn by the condition's kind from a seed of the run seed, the dataset's content and the
    condition only, so every batch and every model of the run sees the same swap; {} when the condition
    needs no partner."""
    if not condition.needs_partner:
        return {}
    seed = derive_seed(run_seed, f"{dataset_fingerprint}#partners", condition.id)
    return condition.partners(items, seed)

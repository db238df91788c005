"""Question sampling shared by the zoo's QA recipes: the easy, groundable questions are oversampled.

Tiny QA models otherwise settle on the blind per-type prior (measured here: ~45 % without looking at the
image). The
zero-hop questions (one attribute of one unique object, counting or existence over the whole scene)
are the ones whose answer the image alone decides with one step of reasoning.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from argus_eval.zoo.training.data import SplitData


def is_zero_hop(q: dict[str, Any]) -> bool:
    """A zero-hop question (query, count or exist over the whole scene)."""
    return bool(q["template_filename"] == "zero_hop.json")


class QuestionSampler:
    """Seeded batches of question indices; a fraction `easy_share` drawn from the zero-hop pool."""

    def __init__(self, split: SplitData, easy_share: float) -> None:
        self.easy = [i for i, q in enumerate(split.questions) if is_zero_hop(q)]
        self.all = list(range(len(split.questions)))
        self.easy_share = easy_share

    def batch(self, size: int, gen: torch.Generator) -> list[int]:
        """size question indices: round(size*easy_share) zero-hop ones, the rest from every question."""
        n_easy = round(size * self.easy_share)
        e = torch.randint(0, len(self.easy), (n_easy,), generator=gen).tolist()
        a = torch.randint(0, len(self.all), (size - n_easy,), generator=gen).tolist()
        return [self.easy[i] for i in e] + [self.all[i] for i in a]

    def describe(self) -> dict[str, Any]:
        """For the manifest."""
        return {
            "easy_share": self.easy_share,
            "zero_hop_questions": len(self.easy),
            "questions": len(self.all),
        }


def curriculum_pool(questions: Sequence[dict[str, Any]], which: str) -> list[int]:
    """Indices of the zero-hop questions of one query type ("query_color"), of every query type
    ("query"), or of every question ("all"): the stages of the zoo's QA curricula.

    Trained on every question from the start, tiny QA models settle on the blind per-type prior; a
    first stage of colour questions alone (8 answers, a useless prior) makes looking pay.
    """
    if which == "all":
        return list(range(len(questions)))
    return [i for i, q in enumerate(questions) if is_zero_hop(q) and str(q["qtype"]).startswith(which)]

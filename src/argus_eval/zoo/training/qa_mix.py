"""Question sampling shared by the zoo's QA recipes: the easy, groundable questions are oversampled.

Tiny QA models otherwise settle on the blind per-type prior (measured here: ~45 % without looking at the
image). The
zero-hop questions (one attribute of one unique object, counting or existence over the whole scene)
are the ones whose answer the image alone decides with one step of reasoning.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from argus_eval.zoo.recipe import Log
from argus_eval.zoo.training.data import SplitData
from argus_eval.zoo.training.loop import LoopResult, Schedule, run_phase

# (phase name, which questions for curriculum_pool, schedule) of one curriculum stage.
Phase = tuple[str, str, Schedule]


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
    ("query"), or of every question ("all", drawn with zero-hop ones oversampled, or "natural", drawn
    uniformly as a test split mixes them): the stages of the zoo's QA curricula.

    Trained on every question from the start, tiny QA models settle on the blind per-type prior; a
    first stage of colour questions alone (8 answers, a useless prior) makes looking pay.
    """
    if which in ("all", "natural"):
        return list(range(len(questions)))
    return [i for i, q in enumerate(questions) if is_zero_hop(q) and str(q["qtype"]).startswith(which)]


def run_curriculum(
    model: torch.nn.Module,
    loss_of: Callable[[torch.Tensor], torch.Tensor],
    phases: Sequence[Phase],
    batch: int,
    sampler: QuestionSampler,
    questions: Sequence[dict[str, Any]],
    gen: torch.Generator,
    seconds: float | None,
    log: Log,
    steps: int | None = None,
    groups: list[dict[str, object]] | None = None,
) -> LoopResult:
    """Train through the curriculum's phases in order; each step is loss_of(batch question indices),
    drawn uniformly from the phase's pool, or from `sampler` (zero-hop oversampled) in an "all" phase.

    `steps`, if given, is split evenly over the phases; `seconds` in proportion to their step counts.
    """
    total = LoopResult(steps=0, seconds=0.0)
    budget_steps = sum(sch.steps for _, _, sch in phases)
    for name, which, schedule in phases:
        if steps is not None:
            schedule = Schedule(steps=max(1, steps // len(phases)), lr=schedule.lr, warmup=min(steps, 30))
        share = None if seconds is None else seconds * schedule.steps / budget_steps
        pool = torch.tensor(curriculum_pool(questions, which), dtype=torch.long)
        log(f"  phase {name}: {len(pool)} questions")
        if len(pool) == 0:  # only in tiny test splits
            continue

        def step(i: int, g: torch.Generator, pool: torch.Tensor = pool, which: str = which) -> torch.Tensor:
            if which == "all":
                return loss_of(torch.tensor(sampler.batch(batch, g)))
            return loss_of(pool[torch.randint(0, len(pool), (batch,), generator=g)])

        res = run_phase(model, step, schedule, gen, share, log, groups)
        total = LoopResult(total.steps + res.steps, total.seconds + res.seconds, total.losses + res.losses)
    return total


def describe_curriculum(phases: Sequence[Phase]) -> list[dict[str, Any]]:
    """The phases for the manifest."""
    return [{"phase": n, "questions": w, "steps": sch.steps, "lr": sch.lr} for n, w, sch in phases]

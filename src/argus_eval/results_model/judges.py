"""The judges block of results.json: each task whose open answers a judge model scored, which judge
(spec, fingerprint, prompt template hash, parse settings), which score is primary, and its counts.
Absent when no task names a judge."""

from __future__ import annotations

from typing import Literal

from argus_eval.results_model.base import Block, Count, Number


class JudgeParse(Block):
    """How the judge's raw text is read into a verdict."""

    verdict: Literal["yes_no", "score"]
    score_max: Number
    max_new_tokens: Count
    parser: Count  # the verdict reader's version (tasks/judge_verdicts.py)


class Judge(Block):
    """One task's judge and what it judged in this run's cells (a judge failure counts the sample failed).

    primary: the score each cell of the task reports as its primary (exact_match: the task's own metric,
    COCO's for captioning; judge: the judged score); the other is in the cell's extras and metrics."""

    task: str
    model: str
    fingerprint: str
    model_fingerprint: str
    template_hash: str
    parse: JudgeParse
    primary: Literal["exact_match", "judge"]
    judged: Count
    failed: Count

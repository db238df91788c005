"""The image-reliance block of results.json: clean minus control (swapped or blank image) scores."""

from __future__ import annotations

from argus_eval.results_model.base import Block, Count, Json, Score, ScoreInterval, Signed, SignedInterval


class Control(Block):
    """One control of a (model, task, dataset): its score and the reliance, or why it was skipped."""

    condition: str
    skipped: str | None = None
    score: Score | None = None
    reliance: Signed | None = None  # clean minus control score
    interval: SignedInterval = None
    same_prediction: Score | None = None
    same_prediction_interval: ScoreInterval = None


class BlindBaseline(Block):
    """The task's answer prior scored like the model (same samples and scheme), or why it is skipped."""

    score: Score | None = None
    skipped: str | None = None
    metrics: dict[str, Json] | None = None
    answered_by: dict[str, int] | None = None
    source: str | None = None


class RelianceEntry(Block):
    """One (task, dataset) of a model with its controls and, when the task reports one, its blind
    baseline. n_samples and clean are absent for an entry whose every control was skipped."""

    task: str
    dataset: str
    n_samples: Count | None = None
    clean: Score | None = None
    controls: dict[str, Control]
    blind_baseline: BlindBaseline | None = None


class Reliance(Block):
    """Image reliance per model (reported beside the axes, never weighted into them)."""

    scoring: str
    models: dict[str, list[RelianceEntry]]
    skipped: list[str]
    notes: list[str]

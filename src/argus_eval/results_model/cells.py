"""Per-cell blocks of results.json: what each (model, task, dataset, condition) ran and scored."""

from __future__ import annotations

from argus_eval.results_model.base import Block, Count, Json, Score


class CellSummary(Block):
    """One cell as the runner scored it: protocol, sample counts, primary score, metrics and failures.

    checkpoint and model_fingerprint name the checkpoint that served the cell (a composite model has one
    per task)."""

    model: str
    task: str
    dataset: str
    condition: str
    protocol: str
    native_protocol: bool
    samples: Count
    scored: Count
    failed: Count
    failure_reasons: list[str]
    primary: Score | None
    metrics: dict[str, Json]
    undefined_reason: str | None = None
    chance: Score | None = None
    chance_basis: str | None = None
    breakdown: dict[str, Json] | None = None
    checkpoint: str | None = None
    model_fingerprint: str | None = None
    # Generative cells only (tasks/answers.py): the share of answers in the form the question asks for,
    # how many there were, and how many had chat-template tokens removed.
    answer_format_rate: Score | None = None
    answers_parsed: int | None = None
    template_cleaned: int | None = None
    # Served models only (models/api.py): the tokens their server reported for the cell's answers.
    prompt_tokens: Count | None = None
    completion_tokens: Count | None = None

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.model, self.task, self.dataset, self.condition)

    def scalar_metrics(self) -> dict[str, float | None]:
        """The metrics that are single figures (numbers or null), in the order the cell lists them."""
        return {
            k: v
            for k, v in self.metrics.items()
            if v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
        }

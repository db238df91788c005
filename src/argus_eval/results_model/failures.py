"""The failures block of results.json: per model, how many of its samples failed or never ran, the
checkpoints that could not load and the cells they did not run."""

from __future__ import annotations

from pydantic import Field

from argus_eval.results_model.base import Block, Score

BASIS = (
    "share = (failed + not run) / samples over all of a model's cells; a model that could not load "
    "counts as all its samples failed"
)
# What every other field, note and line about a model that could not load says instead of the reason,
# which its failures.not_loaded entry states once: a reason runs to several sentences, and the axes,
# pairs, cells and notes about that model would each quote it.
SEE_NOT_LOADED = "see its 'not loaded' entry"
COULD_NOT_LOAD = f"could not load ({SEE_NOT_LOADED})"
NOT_RUN = f"not run: {COULD_NOT_LOAD}"  # ModelFailures.reasons' entry for the samples it did not run


class ModelFailures(Block):
    """One model's samples: asked, scored, failed (in cells that ran) and not run (could not load)."""

    samples: int
    scored: int
    failed: int
    not_run: int
    share: Score
    reasons: list[str]  # a few distinct reasons, failures first, then NOT_RUN for cells it did not run


class NotLoaded(Block):
    """A checkpoint that could not load: the model row it serves, its (redacted) spec and why."""

    model: str
    checkpoint: str
    reason: str


class NotRunCell(Block):
    """A cell the run would have asked of a checkpoint that could not load (reason: COULD_NOT_LOAD)."""

    model: str
    task: str
    dataset: str
    condition: str
    samples: int
    reason: str


class Failures(Block):
    """Every model's failure count and share, the checkpoints that could not load and their cells."""

    basis: str = BASIS
    models: dict[str, ModelFailures]
    not_loaded: list[NotLoaded] = Field(default_factory=list)
    not_run: list[NotRunCell] = Field(default_factory=list)

    def over(self, max_failed: float) -> dict[str, ModelFailures]:
        """The models more than max_failed (a share in [0, 1]) of whose samples failed or did not run."""
        return {m: f for m, f in self.models.items() if f.share > max_failed}

    def with_failures(self) -> dict[str, ModelFailures]:
        """The models with at least one failed or unrun sample."""
        return {m: f for m, f in self.models.items() if f.failed or f.not_run}

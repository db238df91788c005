"""The whole results.json: one typed, frozen document that the runner writes and report, compare and
the advisor read."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal

from pydantic import Field

from argus_eval.results_model.cells import CellSummary
from argus_eval.results_model.efficiency import EfficiencyBlock, Timing
from argus_eval.results_model.failures import Failures
from argus_eval.results_model.judges import Judge
from argus_eval.results_model.manifest import Manifest
from argus_eval.results_model.notebook import scorecard_frame, scorecard_html
from argus_eval.results_model.reliance import Reliance
from argus_eval.results_model.scorecard import ScorecardPart

if TYPE_CHECKING:
    import pandas

SCHEMA: Final = "argus-eval/results/2"
"""The version this ARGUS-EVAL writes. Version 1 differed only in this string (the loader upgrades it)."""


class Results(ScorecardPart):
    """Everything a report needs, as the runner wrote it: the scorecard part (ScorecardPart) plus the
    timing trials, image reliance, per-cell summaries, efficiency profiles, manifest and notes. Build it
    with every field; write it with results_text(); read it with load_results() (loading validates)."""

    schema_: Literal["argus-eval/results/2"] = Field(alias="schema")
    timing: Timing | None
    reliance: Reliance
    cells: list[CellSummary]
    efficiency: dict[str, EfficiencyBlock | None]
    manifest: Manifest
    notes: list[str]
    failures: Failures | None = None  # absent from files written before it was recorded
    judges: list[Judge] | None = None  # absent when no task names a judge (results_model/judges.py)

    def profile(self, model: str) -> EfficiencyBlock | None:
        """A model's efficiency profile: the run's top-level record, else the copy in its row."""
        top = self.efficiency.get(model)
        return top if top is not None else self.models[model].efficiency

    def to_pandas(self) -> pandas.DataFrame:
        """The scorecard as a DataFrame indexed by model, with scorecard.csv's columns: each axis, its
        interval bounds (<axis>_lo, <axis>_hi) and undefined reason, the ranks and the rank shift.
        Needs pandas (the notebook extra: pip install 'argus-eval[notebook]')."""
        return scorecard_frame(self)

    def _repr_html_(self) -> str:
        """The scorecard as a notebook shows it: one row per model, every axis with its interval."""
        return scorecard_html(self)

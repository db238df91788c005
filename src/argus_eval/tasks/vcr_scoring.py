"""VCR's three official scores from one reasoning cell: Q->A (primary), QA->R and Q->AR.

q2a and qa2r items are separate model calls and never pool into one accuracy. The cell's primary score is
Q->A over its q2a items (the paper's figure). QA->R and Q->AR come from metrics.vqa.vcr_scores over the
annotations whose q2a and qa2r items were both scored: Q->AR counts an annotation right only when the answer
and the rationale (given the right answer) are both right. The opt-in 16-way joint prompt keeps its own name.

Components per item row, additive so that the paired bootstrap resamples every score from the same rows:
  0, 1  Q->A right, 1            on q2a rows
  2, 3  QA->R right, 1           on qa2r rows whose q2a partner was scored
  4, 5  both right, 1            on q2a rows whose qa2r partner was scored
  6, 7  joint16 right, 1         on joint16 rows
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from argus_eval.data.types import Sample
from argus_eval.metrics.vqa import vcr_scores
from argus_eval.tasks.base import Finish
from argus_eval.tasks.reasoning_schemes import CellScores

WIDTH = 8
# Where an item's own score goes, by mode; qa2r rows are filled per annotation (only when paired).
OWN = {"q2a": 0, "joint16": 6}
# The opt-in 16-way "answer Because rationale" prompt: its own accuracy under the mode's name, never Q->AR.
JOINT = "joint16"


@dataclass(frozen=True)
class Ratio:
    """Finish: column num / column den of the summed components; NaN where a (re)sample has none.
    A plain value rather than a closure, so a cell result stays picklable."""

    num: int
    den: int

    def __call__(self, sums: NDArray[np.float64]) -> NDArray[np.float64]:
        d = sums[:, self.den]
        with np.errstate(divide="ignore", invalid="ignore"):
            out: NDArray[np.float64] = np.where(d > 0, sums[:, self.num] / np.where(d > 0, d, 1.0), np.nan)
        return out


def _chosen(sample: Sample, pred: str) -> int:
    # The option the model picked, read as the item's score reads it (the right option's text is the right
    # option, even if another option repeats it); an answer outside the options is -1, wrong.
    if sample.answer_index is not None and pred == sample.choices[sample.answer_index]:
        return sample.answer_index
    return sample.choices.index(pred) if pred in sample.choices else -1


def vcr_scheme(samples: Sequence[Sample], preds: Sequence[str], scores: Sequence[float]) -> CellScores:
    """Components, Q->A finish, QA->R / Q->AR / joint16 extras and their full-sample values."""
    rows = np.zeros((len(samples), WIDTH))
    where = {s.sample_id: i for i, s in enumerate(samples)}
    picks: tuple[list[int], list[int], list[int], list[int]] = ([], [], [], [])
    for i, s in enumerate(samples):
        mode = str(s.metadata.get("vcr_mode"))
        if mode in OWN:
            rows[i, OWN[mode] : OWN[mode] + 2] = (scores[i], 1.0)
        pair = s.metadata.get("pair")
        if mode != "q2a" or not pair or pair[1] not in where:
            continue
        j = where[pair[1]]
        rows[j, 2:4] = (scores[j], 1.0)
        rows[i, 4:6] = (scores[i] * scores[j], 1.0)
        for out, value in zip(
            picks,
            (_chosen(s, preds[i]), s.answer_index, _chosen(samples[j], preds[j]), samples[j].answer_index),
            strict=True,
        ):
            out.append(-2 if value is None else int(value))  # a missing label never matches a pick
    sums = rows.sum(0)
    metrics = {"Q->A": float(sums[0] / sums[1]) if sums[1] else float("nan")}
    extras: dict[str, Finish] = {}
    if picks[0]:
        official = vcr_scores(*picks)
        metrics |= {"QA->R": official["QA->R"], "Q->AR": official["Q->AR"]}
        extras |= {"QA->R": Ratio(2, 3), "Q->AR": Ratio(4, 5)}
    if sums[7]:
        metrics[JOINT] = float(sums[6] / sums[7])
        extras[JOINT] = Ratio(6, 7)
    return CellScores(rows, Ratio(0, 1), metrics, extras)

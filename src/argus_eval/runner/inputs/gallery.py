"""The text gallery of a cell: every sample's texts as the model sees them under the cell's condition.

Protocols that score each image against every text of the split (retrieval by pair scores) need the
whole gallery in every batch; it is built once per cell with the same seeds prepare() uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from argus_eval.data.types import Sample
from argus_eval.perturb import view
from argus_eval.perturb.conditions import Condition
from argus_eval.runner.plan.plan import Cell
from argus_eval.tasks.base import Prepared


def sample_texts(sample: Sample, condition: Condition, run_seed: int) -> tuple[str, ...]:
    """A sample's texts under a condition; text i's seed derives from (run seed, sample id, i, condition)."""
    return view.shown_texts(sample.texts, sample.sample_id, condition, run_seed)


Galleries = dict[tuple[str, int], tuple[str, ...]]


def cell_gallery(
    cell_key: str,
    samples: Sequence[Sample],
    condition: Condition,
    run_seed: int,
    memo: Galleries | None = None,
) -> tuple[str, ...]:
    """All texts of a cell's samples, in sample order, under the condition; built once per cell when
    the caller passes its memo (the cell key already names dataset and condition)."""
    key = (cell_key, run_seed)
    if memo is not None and key in memo:
        return memo[key]
    gallery = tuple(t for s in samples for t in sample_texts(s, condition, run_seed))
    if memo is not None:
        memo[key] = gallery
    return gallery


def with_gallery(
    cell: Cell, ready: list[Prepared], run_seed: int, memo: Galleries | None = None
) -> list[Prepared]:
    """The prepared samples with the cell's gallery attached when its protocol scores all pairs."""
    if not ready or not cell.protocol.gallery:
        return ready
    gallery = cell_gallery(cell.key, cell.samples, cell.condition, run_seed, memo)
    return [replace(p, gallery=gallery) for p in ready]

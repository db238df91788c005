"""Alignment of cells by sample id and paired multinomial resampling per (task, dataset).

Pairing: within one (task, dataset) every cell (all models, all conditions) is scored on the
intersection of the cells' sample ids, so a clean and a perturbed score, or two models, always see the
same samples. A sample that failed in any cell of the group is dropped from every cell of that group;
the number dropped per cell is reported. Samples are ordered by id so the draw does not depend on the
order cells arrive in.

Resampling: one multinomial count vector per (task, dataset) and resample, shared by all its cells;
a cell's resampled component sums are counts (rows, n) @ components (n, k). Row 0 is all ones, i.e. the
full sample. The generator of a group is seeded from (seed, crc32 of "task/dataset") so adding a dataset
does not change the draws of the others.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from argus_eval.errors import MetricError
from argus_eval.scoring.types import CellData, CellKey, FloatArray


@dataclass(frozen=True)
class AlignedCell:
    """A cell restricted to its group's common ids: row index of each common id in the cell."""

    cell: CellData
    index: NDArray[np.intp]
    dropped: int


@dataclass(frozen=True)
class Group:
    """All cells of one (task, dataset), aligned on the common sample ids."""

    task: str
    dataset: str
    ids: list[str]
    cells: list[AlignedCell]


def _validate(cell: CellData) -> None:
    comp = cell.components
    if comp.ndim != 2 or comp.shape[0] != len(cell.sample_ids):
        raise MetricError(
            f"cell {cell.key}: components must be (n_samples, k) with n_samples={len(cell.sample_ids)}, "
            f"got shape {comp.shape}"
        )
    if len(set(cell.sample_ids)) != len(cell.sample_ids):
        raise MetricError(f"cell {cell.key}: duplicate sample ids")
    if cell.predictions is not None and len(cell.predictions) != len(cell.sample_ids):
        raise MetricError(
            f"cell {cell.key}: {len(cell.predictions)} predictions for {len(cell.sample_ids)} ids"
        )


def align(cells: Sequence[CellData]) -> list[Group]:
    """Group cells by (task, dataset) and align each group on the ids common to all of its cells."""
    by_group: dict[tuple[str, str], list[CellData]] = {}
    seen: set[CellKey] = set()
    for cell in cells:
        _validate(cell)
        if cell.key in seen:
            raise MetricError(f"cell {cell.key} appears twice")
        seen.add(cell.key)
        by_group.setdefault(cell.key.group, []).append(cell)
    groups = []
    for (task, dataset), members in sorted(by_group.items()):
        members = sorted(members, key=lambda c: c.key)
        common = set(members[0].sample_ids).intersection(*(c.sample_ids for c in members[1:]))
        if not common:
            raise MetricError(
                f"({task}, {dataset}): no sample id is common to all {len(members)} cells; "
                "a cell with no successful sample must be dropped before scoring"
            )
        ids = sorted(common)
        aligned = []
        for c in members:
            pos = {sid: i for i, sid in enumerate(c.sample_ids)}
            index = np.fromiter((pos[s] for s in ids), dtype=np.intp, count=len(ids))
            aligned.append(AlignedCell(c, index, len(c.sample_ids) - len(ids)))
        groups.append(Group(task, dataset, ids, aligned))
    return groups


def paired_counts(group: Group, resamples: int, seed: int) -> FloatArray:
    """(1 + resamples, n) multinomial counts: row 0 all ones (full sample), then the paired resamples.

    Each resample draws n indices uniformly with replacement and counts them (a multinomial draw with
    equal probabilities; bincount is much faster than Generator.multinomial for large n)."""
    n = len(group.ids)
    rng = np.random.default_rng([seed, zlib.crc32(f"{group.task}/{group.dataset}".encode())])
    draws = rng.integers(0, n, size=(resamples, n)) + (np.arange(resamples) * n)[:, None]
    counts = np.bincount(draws.ravel(), minlength=resamples * n).reshape(resamples, n)
    return np.vstack([np.ones((1, n)), counts]).astype(np.float64)


def _flip_indicators(group: Group) -> dict[CellKey, FloatArray]:
    """Per perturbed cell with predictions (and a clean cell with predictions), 1.0 where the
    prediction differs from the same model's clean prediction on the same sample."""
    by_key = {a.cell.key: a for a in group.cells}
    out: dict[CellKey, FloatArray] = {}
    for key, a in by_key.items():
        clean = by_key.get(key.clean_key())
        if key.is_clean or clean is None or a.cell.predictions is None or clean.cell.predictions is None:
            continue
        pert = np.asarray(a.cell.predictions, dtype=object)[a.index]
        ref = np.asarray(clean.cell.predictions, dtype=object)[clean.index]
        out[key] = (pert != ref).astype(np.float64)
    return out


def group_rows(
    group: Group, counts: FloatArray
) -> tuple[dict[CellKey, FloatArray], dict[CellKey, FloatArray]]:
    """Primary score rows of every cell of the group and flip-rate rows of its perturbed cells.

    One matmul of the counts with all cells' components and flip indicators side by side, then each
    cell's finish on its slice of the summed components; a flip rate is the resampled share of flips."""
    flips = _flip_indicators(group)
    blocks = [a.cell.components[a.index].astype(np.float64) for a in group.cells]
    blocks += [f[:, None] for f in flips.values()]
    sums = counts @ np.concatenate(blocks, axis=1)
    scores: dict[CellKey, FloatArray] = {}
    start = 0
    for a in group.cells:
        k = a.cell.components.shape[1]
        score = np.asarray(a.cell.finish(sums[:, start : start + k]), dtype=np.float64)
        if score.shape != (counts.shape[0],):
            raise MetricError(
                f"cell {a.cell.key}: finish returned shape {score.shape}, expected ({counts.shape[0]},)"
            )
        scores[a.cell.key] = score
        start += k
    n = len(group.ids)
    flip_rows = {key: sums[:, start + j] / n for j, key in enumerate(flips)}
    return scores, flip_rows

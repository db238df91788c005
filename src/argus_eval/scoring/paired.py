"""Alignment of cells by sample id and paired multinomial resampling per (model, task, dataset).

Pairing: a model's cells of one (task, dataset) (its clean cell and every condition) are scored on the
samples that model scored in all of them, so its clean and perturbed scores always see the same
samples. Another model's failures never reach them: each model is aligned on its own samples, and a
comparison of two models restricts both to the samples they share (restrict). Samples are ordered by id
so the draw does not depend on the order cells arrive in.

Resampling: one multinomial count vector per resample over a group's ids, shared by all its cells; a
cell's resampled component sums are counts (rows, n) @ components (n, k). Row 0 is all ones, i.e. the
full sample. The generator is seeded from (seed, crc32 of "task/dataset") and draws over the sorted ids,
so the same samples give the same draws whichever model or pair they belong to: two models that scored
the same samples are resampled identically (paired), and adding a dataset does not change the draws of
the others.
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
    """One model's cells of one (task, dataset), aligned on the sample ids common to them; left_out:
    cells that share no sample with the others (they cannot be paired, so they are not scored)."""

    model: str
    task: str
    dataset: str
    ids: list[str]
    cells: list[AlignedCell]
    left_out: tuple[CellKey, ...] = ()


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


def _common_ids(members: Sequence[CellData]) -> tuple[set[str], list[CellData], list[CellKey]]:
    """The ids common to the cells, starting from the clean cell (first in key order otherwise); a cell
    that would leave no common id is left out instead, so one disjoint cell cannot sink the others."""
    first = next((c for c in members if c.key.is_clean), members[0])
    common = set(first.sample_ids)
    kept, left_out = [first], []
    for c in members:
        if c is first:
            continue
        narrowed = common.intersection(c.sample_ids)
        if narrowed:
            common = narrowed
            kept.append(c)
        else:
            left_out.append(c.key)
    return common, sorted(kept, key=lambda c: c.key), left_out


def _aligned(cell: CellData, ids: Sequence[str]) -> AlignedCell:
    pos = {sid: i for i, sid in enumerate(cell.sample_ids)}
    index = np.fromiter((pos[s] for s in ids), dtype=np.intp, count=len(ids))
    return AlignedCell(cell, index, len(cell.sample_ids) - len(ids))


def align(cells: Sequence[CellData]) -> list[Group]:
    """Group cells by (model, task, dataset) and align each group on the ids common to its cells."""
    by_group: dict[tuple[str, str, str], list[CellData]] = {}
    seen: set[CellKey] = set()
    for cell in cells:
        _validate(cell)
        if cell.key in seen:
            raise MetricError(f"cell {cell.key} appears twice")
        seen.add(cell.key)
        if not cell.sample_ids:
            raise MetricError(f"cell {cell.key} has no sample; a cell with no scored sample is not scored")
        by_group.setdefault((cell.key.task, cell.key.dataset, cell.key.model), []).append(cell)
    groups = []
    for (task, dataset, model), members in sorted(by_group.items()):
        common, kept, left_out = _common_ids(sorted(members, key=lambda c: c.key))
        ids = sorted(common)
        groups.append(Group(model, task, dataset, ids, [_aligned(c, ids) for c in kept], tuple(left_out)))
    return groups


def restrict(group: Group, ids: Sequence[str]) -> Group:
    """The group's cells on a subset of its ids (e.g. the samples two models share), in id order."""
    keep = sorted(ids)
    return Group(
        group.model,
        group.task,
        group.dataset,
        keep,
        [_aligned(a.cell, keep) for a in group.cells],
        group.left_out,
    )


# Indices drawn at once (int64, 64 MiB), so the draw's temporaries stay a block whatever the resamples.
_DRAW_ELEMENTS = 1 << 23


def paired_counts(group: Group, resamples: int, seed: int) -> FloatArray:
    """(1 + resamples, n) multinomial counts: row 0 all ones (full sample), then the paired resamples.

    Each resample draws n indices uniformly with replacement and counts them (a multinomial draw with
    equal probabilities; bincount is much faster than Generator.multinomial for large n). The indices
    are drawn a block of resamples at a time and counted into the result, so beyond the result only a
    block is held; the generator keeps a half-used 64-bit word between calls, so consecutive blocks
    continue the very stream one (resamples, n) draw would take, and the counts are the same."""
    n = len(group.ids)
    rng = np.random.default_rng([seed, zlib.crc32(f"{group.task}/{group.dataset}".encode())])
    out = np.empty((1 + resamples, n), dtype=np.float64)
    out[0] = 1.0
    step = max(1, _DRAW_ELEMENTS // max(1, n))
    for r0 in range(0, resamples, step):
        rows = min(step, resamples - r0)
        draws = rng.integers(0, n, size=(rows, n))
        draws += (np.arange(rows) * n)[:, None]  # row r's indices count into row r's slice
        out[1 + r0 : 1 + r0 + rows] = np.bincount(draws.ravel(), minlength=rows * n).reshape(rows, n)
    return out


class Draws:
    """paired_counts memoised by (task, dataset, ids): models (and pairs) that scored the same samples
    share one draw instead of repeating it. One per scoring pass; it holds that pass's arrays only."""

    def __init__(self, resamples: int, seed: int) -> None:
        self.resamples, self.seed = resamples, seed
        self._memo: dict[tuple[str, str, tuple[str, ...]], FloatArray] = {}

    def __call__(self, group: Group) -> FloatArray:
        key = (group.task, group.dataset, tuple(group.ids))
        if key not in self._memo:
            self._memo[key] = paired_counts(group, self.resamples, self.seed)
        return self._memo[key]


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

    One matmul of the counts with the group's cells' components side by side (one model's cells only,
    so the summation order, which depends on the product's shape, never depends on another model),
    then each cell's finish on its slice of the summed components; the flip indicators get a product of
    their own (a cell's scores do not depend on whether predictions were recorded), and a flip rate is
    the resampled share of flips."""
    blocks = [a.cell.components[a.index].astype(np.float64) for a in group.cells]
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
    flips = _flip_indicators(group)
    flip_rows: dict[CellKey, FloatArray] = {}
    if flips:
        shares = counts @ np.stack(list(flips.values()), axis=1) / len(group.ids)
        flip_rows = {key: shares[:, j] for j, key in enumerate(flips)}
    return scores, flip_rows

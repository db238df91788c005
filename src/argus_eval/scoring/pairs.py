"""The head-to-head inputs of one pair of models, on the samples both scored.

Each model's own rows are computed on its own samples (scoring/paired.py), so another model's failures
never move them. A comparison of A and B needs paired rows instead: per shared (task, dataset), both
models' cells restricted to the samples both scored there, resampled by one count vector over exactly
those samples (seeded as every group is, from the seed and the (task, dataset), so the same samples give
the same draws). Where both scored the same samples, those are the models' own rows, reused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from argus_eval.scoring.engine import retention_rows
from argus_eval.scoring.pair_parts import PairInputs
from argus_eval.scoring.paired import Draws, Group, group_rows, restrict
from argus_eval.scoring.types import CellKey, FloatArray
from argus_eval.scoring.view import CellFacts, build_view

TaskDataset = tuple[str, str]


class PairRows:
    """PairInputs of any pair, built on first use (a callable for head_to_head), and the number of
    samples each shared (task, dataset) of a pair is compared on."""

    def __init__(
        self,
        groups: Sequence[Group],
        scores: Mapping[CellKey, FloatArray],
        retention: Mapping[CellKey, FloatArray],
        floor: Mapping[CellKey, float],
        efficiency: Mapping[tuple[str, str], FloatArray],
        draws: Draws,
        facts: CellFacts | None = None,
    ) -> None:
        self._groups = {(g.model, g.task, g.dataset): g for g in groups}
        self._scores = scores
        self._retention = retention  # each model's own retention ratio rows, by perturbed cell
        self._floor = floor
        self._efficiency = efficiency
        self._draws = draws
        self._facts = facts or CellFacts()
        self._memo: dict[tuple[str, str], PairInputs] = {}
        self._common: dict[tuple[str, str], dict[TaskDataset, int]] = {}

    def _own(self, g: Group) -> dict[CellKey, FloatArray]:
        return {a.cell.key: self._scores[a.cell.key] for a in g.cells}

    def _build(self, a: str, b: str) -> PairInputs:
        scores: dict[CellKey, FloatArray] = {}
        common: dict[TaskDataset, int] = {}
        narrowed: set[TaskDataset] = set()  # where the pair's rows are not the models' own
        for (model, task, dataset), ga in sorted(self._groups.items()):
            if model not in (a, b):
                continue
            other = self._groups.get((b if model == a else a, task, dataset))
            if other is None:  # only this model ran it: it names the model's cells, never a part
                scores.update(self._own(ga))
                continue
            if model == b:  # each shared (task, dataset) once, from a's side
                continue
            ids = sorted(set(ga.ids) & set(other.ids))
            common[(task, dataset)] = len(ids)
            if not ids:  # nothing to pair on: the cell is no part of this comparison
                continue
            if len(ids) == len(ga.ids) == len(other.ids):
                scores.update(self._own(ga))
                scores.update(self._own(other))
                continue
            narrowed.add((task, dataset))
            ra, rb = restrict(ga, ids), restrict(other, ids)
            counts = self._draws(ra)  # one draw over the common samples, for both models
            scores.update(group_rows(ra, counts)[0])
            scores.update(group_rows(rb, counts)[0])
        self._common[(a, b)] = common
        retention = {
            m: [(k, r) for k, r in self._retention.items() if k.model == m and k.group not in narrowed]
            + [(r.key, r.ratio) for r in retention_rows(m, scores, {})[0] if r.key.group in narrowed]
            for m in (a, b)
        }
        views = {
            m: build_view(
                m,
                scores,
                self._facts,
                retention=dict(retention[m]),
                floor=self._floor,
                efficiency_tasks=self._efficiency,
            )
            for m in (a, b)
        }
        return PairInputs(views)

    def __call__(self, a: str, b: str) -> PairInputs:
        """The pair's inputs (either order gives the same)."""
        key = (min(a, b), max(a, b))
        if key not in self._memo:
            self._memo[key] = self._build(*key)
        return self._memo[key]

    def common_samples(self, a: str, b: str) -> dict[TaskDataset, int]:
        """(task, dataset) -> samples both scored in all their cells there, for every shared one."""
        self(a, b)
        return dict(self._common[(min(a, b), max(a, b))])

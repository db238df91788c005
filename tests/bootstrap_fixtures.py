"""Random scored cells and efficiency profiles of three models, shared by the bootstrap and paired-block
tests."""

from __future__ import annotations

import numpy as np

from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.runner.plan.cell_keys import cell_key
from argus_eval.scoring.cells import mean_cell
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.types import CellData

N = 120
IDS = [f"id{i:03d}" for i in range(N)]
GROUPS = (("retrieval", "coco"), ("retrieval", "flickr"), ("reasoning", "clevr"), ("reasoning", "vcr"))
CONDITIONS = ("clean", "image:fog@1", "image:fog@3")


def random_cells(seed: int, models: tuple[str, ...] = ("A", "B", "C")) -> list[CellData]:
    rng = np.random.default_rng(seed)
    cells = []
    for m in models:
        for t, d in GROUPS:
            base = rng.uniform(0.3, 0.9)
            for j, cond in enumerate(CONDITIONS):
                scores = (rng.random(N) < base * (1 - 0.15 * j)).astype(float)
                preds = [str(int(x)) for x in scores]
                cells.append(mean_cell(cell_key(m, t, d, cond), IDS, scores, preds))
    return cells


def profiles() -> dict[str, EfficiencyProfile | None]:
    fp = {"id": "same"}
    return {
        "A": EfficiencyProfile(10, 12, 90, 800, 10**9, 10, fp),
        "B": EfficiencyProfile(20, 25, 60, 400, 2 * 10**9, 10, fp),
        "C": EfficiencyProfile(15, 19, 70, 600, 10**9, 10, fp),
    }


OPTS = ScoringOptions(resamples=300, seed=11)

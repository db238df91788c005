"""A cell's further official scores (e.g. VCR's QA->R and Q->AR beside its Q->A), with paired intervals.

Each extra is a finish over the cell's own components, evaluated on the same paired multinomial resamples
as the primary scores (same (model, task, dataset) groups, sample ids and seed), so an extra's interval
is paired with every other cell's of its group exactly as the primary score's is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from argus_eval.results_model.scorecard import ExtraScore
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.paired import align, paired_counts
from argus_eval.scoring.statistics import percentile_interval
from argus_eval.scoring.types import CellData, CellKey, FloatArray

ExtraFinish = Callable[[FloatArray], FloatArray]


def extra_scores(
    cells: Sequence[CellData],
    extras: Mapping[CellKey, Mapping[str, ExtraFinish]],
    options: ScoringOptions,
) -> dict[CellKey, dict[str, ExtraScore]]:
    """cell -> extra name -> its full common-sample score and percentile interval."""
    out: dict[CellKey, dict[str, ExtraScore]] = {}
    for group in align(cells):
        wanted = [a for a in group.cells if extras.get(a.cell.key)]
        if not wanted:
            continue
        counts = paired_counts(group, options.resamples, options.seed)
        for a in wanted:
            sums = counts @ a.cell.components[a.index].astype(np.float64)
            entry: dict[str, ExtraScore] = {}
            for name, finish in sorted(extras[a.cell.key].items()):
                rows = np.asarray(finish(sums), dtype=np.float64)
                point = float(rows[0])
                interval = percentile_interval(rows, options.confidence) if options.resamples else None
                entry[name] = ExtraScore(score=point if np.isfinite(point) else None, interval=interval)
            out[a.cell.key] = entry
    return out

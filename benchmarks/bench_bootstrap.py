"""Benchmark the paired bootstrap of the scorecard.

Default: 1,000 resamples over 5 models x 3 tasks x 3 datasets x 7 conditions (315 cells) x 1,000 samples;
prints the seconds for building the cells, the point scorecard and the bootstrap scorecard.
Run: python benchmarks/bench_bootstrap.py [--resamples N] [--samples N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.runner.plan.cell_keys import cell_key
from argus_eval.scoring.cells import mean_cell
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.scorecard import bootstrap_scorecard, compute_scorecard
from argus_eval.scoring.types import CellData

TASKS = ("retrieval", "captioning", "reasoning")
DATASETS = ("d1", "d2", "d3")
CONDITIONS = (
    "clean",
    "image:fog@1",
    "image:fog@3",
    "image:fog@5",
    "text:typos@1",
    "text:typos@3",
    "text:typos@5",
)


def build_cells(models: int, samples: int, seed: int = 0) -> list[CellData]:
    """Random per-sample scores with predictions, so flip rates are part of the work."""
    rng = np.random.default_rng(seed)
    ids = [f"s{i}" for i in range(samples)]
    cells = []
    for m in range(models):
        for t in TASKS:
            for d in DATASETS:
                for c in CONDITIONS:
                    scores = rng.random(samples)
                    preds = [str(int(x * 4)) for x in scores]
                    cells.append(mean_cell(cell_key(f"model{m}", t, d, c), ids, scores, preds))
    return cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", type=int, default=5)
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args()
    t0 = time.perf_counter()
    cells = build_cells(args.models, args.samples)
    fp = {"id": "bench"}
    profiles: dict[str, EfficiencyProfile | None] = {
        f"model{m}": EfficiencyProfile(10.0 + m, 12.0 + m, 100.0 - m, 500.0 + m, 10**9, 10**8, fp)
        for m in range(args.models)
    }
    opts = ScoringOptions(resamples=args.resamples, seed=0)
    t1 = time.perf_counter()
    compute_scorecard(cells, profiles, opts)
    t2 = time.perf_counter()
    bootstrap_scorecard(cells, profiles, opts)  # the scorecard as results.json holds it
    t3 = time.perf_counter()
    print(
        f"{len(cells)} cells x {args.samples} samples, {args.resamples} resamples: "
        f"build cells {t1 - t0:.2f} s, point scorecard {t2 - t1:.2f} s, "
        f"bootstrap scorecard {t3 - t2:.2f} s"
    )


if __name__ == "__main__":
    main()

"""What a planned run will cost, counted before it runs (`argus run --dry-run`): per model and in all,
the records it writes, the batches a local model runs, the requests a served model is sent, the judge
calls, the corruptions made (once per image, condition and seed for every model of the run: the
perturbed-image store shares them) and the region extractions (once per model and pixels shown: a
condition that shows a clean image, as a text perturbation or a swap does, adds none; a blank counts one
per image file, where images of one size share one in a run). Counts, not times: the wall time of a
run depends on the models, which a dry run does not load.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from argus_eval.models.spec import ModelConfig
from argus_eval.perturb.conditions import CLEAN
from argus_eval.runner.plan.plan import Cell
from argus_eval.tasks.judge import Judged


def _judged(c: Cell, asked: dict[tuple[str, int], int]) -> int:
    """The cell's samples a judge would read: the run asks the task per answer, and a multiple-choice
    item is scored exactly, never judged (asked once per task and sample list: conditions share it)."""
    key = (c.task.name, id(c.samples))
    if key not in asked:
        task = c.task
        judge = task.judge_item if isinstance(task, Judged) else None
        asked[key] = 0 if judge is None else sum(judge(s, {}) is not None for s in c.samples)
    return asked[key]


@dataclass
class ModelCost:
    """One model's share of the run."""

    records: int = 0
    batches: int = 0  # forward batches of a local model (a protocol may call the model more per batch)
    requests: int = 0  # requests to a served model's server
    judged: int = 0  # answers sent to a judge


@dataclass
class RunCost:
    """Per model and in all; corruptions and region extractions are the run's, shared by its models."""

    models: dict[str, ModelCost] = field(default_factory=dict)
    corruptions: int = 0
    region_extractions: int = 0
    records_by_task: dict[str, int] = field(default_factory=dict)  # for the time estimate

    def to_json(self) -> dict[str, Any]:
        """The cost as the dry run's JSON gives it."""
        rows = {m: vars(c) for m, c in self.models.items()}
        total = {k: sum(r[k] for r in rows.values()) for k in vars(ModelCost())}
        return {
            "models": rows,
            "total": {
                **total,
                "corruptions": self.corruptions,
                "region_extractions": self.region_extractions,
            },
        }


def run_cost(
    cells: Iterable[Cell],
    served: Callable[[ModelConfig], bool],
    judged_tasks: set[str],
    reads_regions: Callable[[ModelConfig], bool],
) -> RunCost:
    """The cost of the planned cells: served(m) says whether m is served, judged_tasks names the tasks
    whose answers a judge scores, reads_regions(m) whether m reads region features."""
    cost = RunCost()
    corrupted: set[tuple[str, str, str, str]] = set()
    regions: set[tuple[str, str, str, str, str]] = set()
    judgeable: dict[tuple[str, int], int] = {}
    for c in cells:
        mc = cost.models.setdefault(c.model.name, ModelCost())
        n = len(c.samples)
        mc.records += n
        cost.records_by_task[c.task.name] = cost.records_by_task.get(c.task.name, 0) + n
        calls = c.protocol.cost(c.samples)
        if served(c.model):
            mc.requests += calls
        else:
            mc.batches += math.ceil(n / c.model.batch_size) if n else 0
        if c.task.name in judged_tasks:
            mc.judged += _judged(c, judgeable)
        # asked once per cell, not per sample: a paper-sized plan has millions of samples in its cells
        perturbed, regioned = c.condition.shows_perturbed_image, reads_regions(c.model)
        if not (perturbed or regioned):
            continue
        seeded, cond, key = c.condition.uses_seed, c.condition.id, c.model.load_key()
        # Regions are cached by the pixels they come from (models/feature_cache.py): a condition that
        # leaves the image as it is (clean, a text perturbation) or shows another clean image of the
        # cell (a swap) reads the clean image's regions, extracted once under the clean condition.
        new_pixels = "image" in c.condition.behaviour.changes and not c.condition.needs_partner
        for s in c.samples:
            if s.image is None:
                continue
            # a seed-blind corruption is one image per file; a seeded one differs per sample
            shown = (c.dataset.name, s.image, cond, s.sample_id if seeded else "")
            if perturbed:
                corrupted.add(shown)
            if regioned:
                regions.add((*(shown if new_pixels else (c.dataset.name, s.image, CLEAN.id, "")), key))
    cost.corruptions = len(corrupted)
    cost.region_extractions = len(regions)
    return cost

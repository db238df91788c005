"""The model actor of the Ray executor: loads one model itself and runs shards of whole batches.

It is a plain class (wrapped with ray.remote by the executor) so that this module imports without Ray.
Its model and the helpers its cells call are held by a model pool of its own, the one cache the local
executor uses too (runner/execute/pool.py). Images are decoded and perturbed here, by the same
run_batch as the local executor, so every input and every batch boundary is the one a local run uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from argus_eval.errors import CapabilityError
from argus_eval.models.feature_cache import bind_feature_cache
from argus_eval.models.spec import ModelConfig
from argus_eval.runner.execute.local import rerun_in_batch
from argus_eval.runner.execute.pool import ModelLoader, ModelPool
from argus_eval.runner.inputs.context import ExecutionContext
from argus_eval.runner.plan.plan import Cell
from argus_eval.tasks.records import Record


@dataclass
class ShardResult:
    """Records of each batch of a shard (plain data) and the model calls it took."""

    batches: list[list[Record]]
    forward_calls: int
    # Why the task cannot run this cell at all (its inputs are missing); the driver leaves it out.
    left_out: str | None = None


class ModelWorker:
    """Holds one model loaded across cells and shards; a restarted actor reloads it on its next shard."""

    def __init__(self, cfg: ModelConfig, loader: ModelLoader) -> None:
        self._cfg = cfg
        # the model and the helper models its cells call (a first stage), each loaded once, by load_key
        self._pool = ModelPool(loader)
        self._bound = False
        self._cells: dict[str, Cell] = {}
        self._ctx = ExecutionContext()  # this worker's images, partners and galleries

    def ready(self) -> bool:
        return True

    def run_shard(
        self,
        key: str,
        cell_box: list[Any],
        batches: Sequence[Sequence[int]],
        run_seed: int,
        wanted: Sequence[Sequence[int]] | None = None,
    ) -> ShardResult:
        """Run the batches (sample positions of the cell) in order and return the records of the wanted
        positions of each (all when wanted is None), computed in their whole batch as locally. cell_box
        holds the cell's object ref inside a list so Ray does not resolve it per call; the cell is
        fetched once per actor."""
        model = self._pool.get(self._cfg)
        if not self._bound:
            bind_feature_cache(model, self._ctx.features)
            self._bound = True
        cell = self._cells.get(key)
        if cell is None:
            import ray

            cell = self._cells[key] = ray.get(cell_box[0])
        helpers = [self._pool.get(h) for h in cell.helpers]
        calls = [model, *helpers]
        before = sum(m.forward_calls for m in calls)
        try:
            keep = [set(pos) for pos in batches] if wanted is None else [set(w) for w in wanted]
            out = [
                rerun_in_batch(cell, model, list(pos), w, run_seed, self._ctx, helpers)
                for pos, w in zip(batches, keep, strict=True)
            ]
        except CapabilityError as e:  # as in the local executor: the cell is left out and named
            return ShardResult([], sum(m.forward_calls for m in calls) - before, left_out=str(e))
        return ShardResult(out, sum(m.forward_calls for m in calls) - before)

"""The local executor: runs a plan's missing work in fixed batches and writes records as it goes.

Batches are fixed slices of each cell's sample list, and each batch is written in one transaction,
so a resumed run recomputes exactly the batches a killed run lost, with identical inputs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, nullcontext
from dataclasses import dataclass, field
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from argus_eval.data.types import Sample
from argus_eval.errors import (
    CapabilityError,
    ModelCallError,
    PerturbationError,
    SampleError,
    StrictModeError,
)
from argus_eval.models.feature_cache import bind_feature_cache
from argus_eval.models.loading import is_served
from argus_eval.models.protocols import Model
from argus_eval.models.secrets import redact_text
from argus_eval.models.spec import ModelConfig
from argus_eval.perturb import view
from argus_eval.perturb.processes import CorruptionProcesses
from argus_eval.runner.execute.ahead import Ahead, window
from argus_eval.runner.execute.pool import LOAD_ERRORS, ModelPool
from argus_eval.runner.execute.stamps import CellStamps, pending
from argus_eval.runner.execute.usage import attach_usage
from argus_eval.runner.execute.writer import BatchWriter
from argus_eval.runner.inputs.context import ExecutionContext
from argus_eval.runner.inputs.feature_store import StoredFeatures
from argus_eval.runner.inputs.gallery import with_gallery
from argus_eval.runner.inputs.images import ImageCache
from argus_eval.runner.inputs.perturbed_store import PerturbedStore
from argus_eval.runner.inputs.prepare import prepare
from argus_eval.runner.plan.plan import Cell, Plan
from argus_eval.runner.store import Store
from argus_eval.tasks.base import Prepared
from argus_eval.tasks.records import Record


@dataclass
class ExecStats:
    """What an execution did: forward calls made, records written, failures recorded."""

    forward_calls: int = 0
    records_written: int = 0
    failed: int = 0
    stale: int = 0  # records recomputed because an input (image file, run seed) changed
    retried: int = 0  # failed records of an earlier run computed again
    answers_cut: int = 0  # generated answers cut to the model's max_answer_chars
    regions_padded: int = 0  # images with fewer detector regions than asked (padded; LXMERT)
    models_loaded: list[str] = field(default_factory=list)
    # Calls made by models outside this process (Ray workers); the driver's pool cannot count them.
    remote_forward_calls: int = 0
    # model -> how its calls went, per load (served models: concurrency timeline, tokens; run_log.json)
    call_logs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # images decoded, corruptions computed and reused (memory, disk), damaged entries (run_log.json)
    inputs: dict[str, int] = field(default_factory=dict)


def batches(cell: Cell, batch_size: int) -> Iterator[list[int]]:
    """Fixed slices (sample positions) of a cell's samples."""
    n = len(cell.samples)
    for start in range(0, n, batch_size):
        yield list(range(start, min(start + batch_size, n)))


def swap_partners(
    cell: Cell, run_seed: int, memo: dict[tuple[str, int], dict[str, Sample]] | None = None
) -> dict[str, Sample]:
    """sample id -> the sample whose image a swap control shows in its place; empty for every other
    condition, and when the cell has fewer than two distinct images (prepare then names the reason).

    Derived over the whole cell, never per batch, so every batch (and every model) sees the same swap;
    the seed depends on the run seed, the dataset's content and the condition only."""
    if not cell.condition.needs_partner:
        return {}
    key = (cell.key, run_seed)
    if memo is not None and key in memo:  # computed once per cell, not once per batch
        return memo[key]
    items = [(s.sample_id, s.image) for s in cell.samples if s.image is not None]
    by_id = {s.sample_id: s for s in cell.samples}
    drawn = view.partners(items, cell.dataset.fingerprint, cell.condition, run_seed)
    partners = {sid: by_id[p] for sid, p in drawn.items()}
    if memo is not None:
        memo[key] = partners
    return partners


@dataclass
class Inputs:
    """One batch made ready for its model: the prepared samples, and failure records of the samples
    whose inputs could not be made (an undecodable image, a blur kernel larger than the image)."""

    ready: list[Prepared]
    failed: list[Record]


def prepare_batch(cell: Cell, positions: Sequence[int], run_seed: int, ctx: ExecutionContext) -> Inputs:
    """Decode and perturb one batch's inputs (from any thread: the context's caches are shared)."""
    failed: list[Record] = []
    ready: list[Prepared] = []
    partners = swap_partners(cell, run_seed, ctx.partners)
    for i in positions:
        sample = cell.samples[i]
        partner = partners.get(sample.sample_id)
        try:
            ready.append(prepare(sample, cell.dataset, cell.condition, run_seed, partner, ctx.images))
        except (SampleError, PerturbationError) as e:  # e.g. an image too small for a blur kernel
            failed.append(Record(sample.sample_id, None, error=f"input: {e}"))
    return Inputs(with_gallery(cell, ready, run_seed, ctx.galleries), failed)


def infer_batch(cell: Cell, model: Model, inputs: Inputs, helpers: Sequence[Model] = ()) -> list[Record]:
    """Infer one prepared batch; failed calls are isolated sample by sample into failure records."""
    records = list(inputs.failed)
    ready = inputs.ready
    if ready:
        t0 = time.perf_counter()
        try:
            out = cell.task.infer(model, cell.protocol, ready, cell.dataset, helpers)
            attach_usage(model, out)
        except ModelCallError:
            out = _one_by_one(cell, model, ready, helpers)
        share = (time.perf_counter() - t0) / len(ready)
        for r in out:
            r.seconds = share
        records.extend(out)
    return records


def run_batch(
    cell: Cell,
    model: Model,
    positions: Sequence[int],
    run_seed: int,
    ctx: ExecutionContext,
    helpers: Sequence[Model] = (),
) -> list[Record]:
    """Prepare and infer one batch (helpers: the cell's helper models, loaded); undecodable samples and
    failed calls become failure records."""
    return infer_batch(cell, model, prepare_batch(cell, positions, run_seed, ctx), helpers)


def rerun_in_batch(
    cell: Cell,
    model: Model,
    batch: Sequence[int],
    wanted: set[int],
    run_seed: int,
    ctx: ExecutionContext,
    helpers: Sequence[Model] = (),
    inputs: Inputs | None = None,
) -> list[Record]:
    """Records of the wanted positions of one fixed batch (inputs: the batch prepared already, local
    models only).

    A local model runs the whole batch (padding and batched kernels make an answer depend, in the last
    float bits, on its batch-mates), so a recomputed record equals a fresh run's exactly; a served
    model answers each request alone and runs only the wanted positions."""
    local = not is_served(cell.model)
    if inputs is not None and local:
        records = infer_batch(cell, model, inputs, helpers)
    else:
        positions = batch if local else [i for i in batch if i in wanted]
        records = run_batch(cell, model, positions, run_seed, ctx, helpers)
    ids = {cell.samples[i].sample_id for i in wanted}
    return [r for r in records if r.sample_id in ids]


def _one_by_one(
    cell: Cell, model: Model, ready: Sequence[Prepared], helpers: Sequence[Model]
) -> list[Record]:
    """After a failed batch, isolate the failing samples so one bad input does not sink its batch."""
    out: list[Record] = []
    for p in ready:
        try:
            one = cell.task.infer(model, cell.protocol, [p], cell.dataset, helpers)
            attach_usage(model, one)
            out.extend(one)
        except ModelCallError as e:
            out.append(Record(p.sample.sample_id, None, error=f"model: {e}"))
    return out


# (cell, its fixed batch, the positions of that batch to (re)write)
Todo = tuple[Cell, list[int], set[int]]


def _todo(
    plan: Plan, store: Store, run_seed: int, ctx: ExecutionContext, stats: ExecStats
) -> tuple[list[Todo], dict[str, CellStamps]]:
    """Every fixed batch holding a position the store lacks (or holds stale, or failed when retried),
    in plan order, and each cell's input stamps; stale and retried records are counted in stats."""
    todo: list[Todo] = []
    stamps: dict[str, CellStamps] = {}
    for cell in plan.cells:
        store.describe_cell(cell.key, cell.describe())
        stamps[cell.key] = CellStamps(cell, run_seed, swap_partners(cell, run_seed, ctx.partners))
        due = pending(cell, store, stamps[cell.key], plan.retry_failed)
        stats.stale += due.stale
        stats.retried += due.retried
        missing = set(due.positions)
        for pos in batches(cell, cell.model.batch_size):
            if any(i in missing for i in pos):
                todo.append((cell, pos, {i for i in pos if i in missing}))
    return todo, stamps


def _progress(quiet: bool, total: int) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        disable=quiet or total == 0,
        transient=True,
    )


@dataclass
class _Batches:
    """The local executor's loop over its batches: what is left to do, where records go, the batches
    sent ahead (served models) or prepared ahead (local ones), and what it gave up on."""

    plan: Plan
    store: Store
    pool: ModelPool
    run_seed: int
    strict: bool
    ctx: ExecutionContext
    todo: list[Todo]
    stamps: dict[str, CellStamps]
    stats: ExecStats
    workers: int  # threads that prepare a local model's next batches
    ahead: Ahead[list[Record]]
    prefetch: Ahead[Inputs]
    writer: BatchWriter
    left_out: set[str] = field(default_factory=set)  # cells whose inputs the task cannot use: plan.skipped
    dead: set[str] = field(default_factory=set)  # checkpoints that failed to load here (from a stored info)
    # every model a cell loads (its checkpoint and helpers) is done after the last batch that uses it
    last_use: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.last_use = {m.load_key(): k for k, (c, _, _) in enumerate(self.todo) for m in c.models}

    def load(self, cell: Cell) -> tuple[Model, list[Model]] | None:
        """The cell's model and helpers, loaded; None when its checkpoint cannot load (named in the plan;
        fatal with strict)."""
        if cell.model.load_key() in self.dead:
            return None
        try:
            model = self.pool.get(cell.model)
            helpers = [self.pool.get(h) for h in cell.helpers]
            bind_feature_cache(model, self.ctx.features)
        except LOAD_ERRORS as e:
            if self.strict:
                raise
            self.dead.add(cell.model.load_key())
            self.plan.not_loadable(cell.model, redact_text(str(e)))
            return None
        return model, helpers

    def records(self, k: int, model: Model, helpers: list[Model]) -> list[Record]:
        """Batch k's records: sent ahead, prepared ahead or run now; none when its cell is left out."""
        cell, pos, wanted = self.todo[k]
        keys = [m.load_key() for m in cell.models]

        def eligible(j: int) -> bool:
            todo = self.todo
            return (
                j < len(todo)
                and todo[j][0].key not in self.left_out
                and keys == [m.load_key() for m in todo[j][0].models]
            )

        def work(j: int) -> list[Record]:
            c, p, w = self.todo[j]
            out = rerun_in_batch(c, model, p, w, self.run_seed, self.ctx, helpers)
            self.stamps[c.key].warm(r.sample_id for r in out)
            return out

        def inputs_of(j: int) -> Inputs:
            c, p, _ = self.todo[j]
            ready = prepare_batch(c, p, self.run_seed, self.ctx)
            # its files were just read to decode them: their stamps cost no read, here and not on the
            # model's thread
            self.stamps[c.key].warm(c.samples[i].sample_id for i in p)
            return ready

        width = window([model, *helpers], len(pos))
        # a served model's next batches go out while this one is in flight (runner/execute/ahead.py); a
        # local model's next batches are decoded and perturbed while it runs this one
        self.ahead.fill(k, width, eligible, work)
        if width == 1 and not is_served(cell.model):
            self.prefetch.fill(k, self.workers + 1, eligible, inputs_of)
        sent, ready = self.ahead.take(k), self.prefetch.take(k)
        if cell.key in self.left_out:
            return []
        try:
            if sent is not None:
                return sent.result()
            if ready is not None:
                return rerun_in_batch(
                    cell, model, pos, wanted, self.run_seed, self.ctx, helpers, ready.result()
                )
            return work(k)
        except CapabilityError as e:  # e.g. a substitute protocol the dataset gives no inputs
            self.left_out.add(cell.key)
            self.plan.leave_out(cell, str(e))
            return []

    def write(self, cell: Cell, records: list[Record]) -> None:
        """One batch's records in one transaction, counted; with strict, a failed record is fatal."""
        failed = [r for r in records if r.error is not None]
        if failed and self.strict:
            raise StrictModeError(f"sample {failed[0].sample_id} failed ({failed[0].error}); --strict is set")
        if records:
            self.writer.write(cell.key, records, self.stamps[cell.key])
        self.stats.records_written += len(records)
        self.stats.failed += len(failed)

    def finish(
        self, k: int, model: Model, on_model_done: Callable[[ModelConfig, Model], None] | None
    ) -> None:
        """After batch k: the models whose last batch it was are done (on_model_done for the cell's own)."""
        cell = self.todo[k][0]
        if self.last_use[cell.model.load_key()] == k:
            self.stats.models_loaded.append(cell.model.name)
            if on_model_done is not None:
                on_model_done(cell.model, model)
        for m in cell.models:
            if self.last_use[m.load_key()] == k:
                self.pool.done(m)  # released, or kept for the timing trials where the pool parks it


def execute(
    plan: Plan,
    store: Store,
    pool: ModelPool,
    run_seed: int,
    strict: bool,
    quiet: bool = False,
    on_model_done: Callable[[ModelConfig, Model], None] | None = None,
    workers: int = 1,
    processes: int = 0,
) -> ExecStats:
    """Run every batch of the plan that the store does not already hold.

    on_model_done(cfg, model) runs after a model's last batch, before it is released (e.g. to
    profile it while its weights are loaded). workers: threads that prepare a local model's next
    batches (decode, perturb) while it runs the current one; processes: worker processes that compute
    their corruptions (perturb/processes.py; 0: in the threads)."""
    stats = ExecStats()
    # this run's images, swap partners, galleries and features (kept in the store where cheap)
    # perturbed images are kept beside the store, so a model planned after the memory moved on, or a
    # rerun adding a model, reads them back instead of corrupting every image again
    corruptor = CorruptionProcesses(processes) if processes > 0 else None
    images = ImageCache(disk=PerturbedStore(store.path.parent / "perturbed"), processes=corruptor)
    ctx = ExecutionContext(images=images, features=StoredFeatures(store))
    todo, stamps = _todo(plan, store, run_seed, ctx, stats)
    total = sum(len(w) for _, _, w in todo)
    with (
        closing(corruptor) if corruptor is not None else nullcontext(),  # after the threads stop
        _progress(quiet, total) as progress,
        closing(Ahead[list[Record]]()) as ahead,
        closing(Ahead[Inputs](workers, "argus-inputs")) as prefetch,
        closing(BatchWriter(store)) as writer,  # closed first: every record is stored before the rest
    ):
        loop = _Batches(
            plan, store, pool, run_seed, strict, ctx, todo, stamps, stats, workers, ahead, prefetch, writer
        )
        bar = progress.add_task("evaluating", total=total)
        for k, (cell, _, wanted) in enumerate(todo):
            progress.update(
                bar, description=f"{cell.model.name} {cell.task.name} {cell.dataset.name} {cell.condition.id}"
            )
            loaded = loop.load(cell)
            if loaded is not None:
                loop.write(cell, loop.records(k, *loaded))
            progress.advance(bar, len(wanted))
            if loaded is not None:
                loop.finish(k, loaded[0], on_model_done)
    stats.forward_calls = pool.forward_calls
    stats.answers_cut = pool.answers_cut
    stats.call_logs = pool.call_logs
    stats.regions_padded = pool.regions_padded
    stats.inputs = images.to_json()
    return stats

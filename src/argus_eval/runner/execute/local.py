"""The local executor: runs a plan's missing work in fixed batches and writes records as it goes.

Batches are fixed slices of each cell's sample list, and each batch is written in one transaction,
so a resumed run recomputes exactly the batches a killed run lost, with identical inputs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from argus_eval.data.types import Sample
from argus_eval.efficiency.work import DTYPE_BYTES
from argus_eval.errors import (
    CapabilityError,
    CheckpointError,
    ModelCallError,
    ModelLoadError,
    PerturbationError,
    SampleError,
    StrictModeError,
)
from argus_eval.models.feature_cache import bind_feature_cache
from argus_eval.models.protocols import Model
from argus_eval.models.secrets import redact_text
from argus_eval.models.spec import ModelConfig
from argus_eval.perturb import controls
from argus_eval.perturb.conditions import derive_seed
from argus_eval.runner.execute.ahead import Ahead, window
from argus_eval.runner.execute.stamps import input_stamps, pending
from argus_eval.runner.execute.usage import attach_usage
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

ModelLoader = Callable[[ModelConfig], Model]

# What "cannot load" means: the run names the model with the reason and goes on with the others.
LOAD_ERRORS = (ModelLoadError, CheckpointError)

# Weight bytes a pool may keep loaded after execution for the timing trials (pipeline.py): 1 GiB holds
# every zoo checkpoint many times over (each under 5 MB), while a real 3B model (6 GB in bfloat16) is
# released after its last batch as before, so parking never holds the memory of a large model.
PARK_BYTES = 1 << 30


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


class ModelPool:
    """Loads each model at most once per run, and only when it has work to do.

    Keyed by the checkpoint config (ModelConfig.load_key), not the row name: a composite model's
    checkpoints are separate models, each loaded when its task needs it and released after.
    park_bytes: weight bytes of models whose work is done (``done``) that the pool may keep loaded
    ("parked") for a later get instead of releasing them; 0 releases every one at once."""

    def __init__(self, loader: ModelLoader, park_bytes: int = 0) -> None:
        self._loader = loader
        self._models: dict[str, Model] = {}
        self._park_bytes = park_bytes
        self._parked: dict[str, int] = {}  # load_key -> weight bytes, of models kept after their work
        self.closed_calls = 0
        self.closed_cut = 0
        self.closed_padded = 0
        self.call_logs: dict[str, list[dict[str, Any]]] = {}
        self.on_load: Callable[[], None] = lambda: None  # after each load (the run's torch threads)

    @property
    def loader(self) -> ModelLoader:
        """How this pool loads a model (remote executors give it to their workers)."""
        return self._loader

    def get(self, cfg: ModelConfig) -> Model:
        """The loaded model of cfg; a load error names the model, task and key path of cfg's setting."""
        key = cfg.load_key()
        if key not in self._models:
            with cfg.located():
                self._models[key] = self._loader(cfg)
            self.on_load()
        return self._models[key]

    def release(self, cfg: ModelConfig) -> None:
        self._release(cfg.load_key())

    def done(self, cfg: ModelConfig) -> None:
        """cfg's work is done for now: kept loaded (parked) while its weights fit what is left of the
        parking budget, so that a later get finds it loaded; else (or its size unknown) released."""
        key = cfg.load_key()
        m = self._models.get(key)
        if m is None or key in self._parked:
            return
        size = weight_bytes(m)
        if size is not None and sum(self._parked.values()) + size <= self._park_bytes:
            self._parked[key] = size
            return
        self._release(key)

    @property
    def parked(self) -> list[str]:
        """Load keys of the models kept loaded after their work (``done``), in parking order."""
        return list(self._parked)

    def _release(self, key: str) -> None:
        self._parked.pop(key, None)
        m = self._models.pop(key, None)
        if m is not None:
            self.closed_calls += m.forward_calls
            self.closed_cut += _answers_cut(m)
            self.closed_padded += _regions_padded(m)
            log = getattr(m, "call_log", None)  # optional: adapters that log their calls (served ones)
            if isinstance(log, dict):
                self.call_logs.setdefault(m.info.name, []).append(log)
            m.close()

    @property
    def forward_calls(self) -> int:
        return self.closed_calls + sum(m.forward_calls for m in self._models.values())

    @property
    def answers_cut(self) -> int:
        """Answers cut to their model's length cap (adapters that cap count them)."""
        return self.closed_cut + sum(_answers_cut(m) for m in self._models.values())

    @property
    def regions_padded(self) -> int:
        """Images whose detector regions were padded (adapters that pad count them)."""
        return self.closed_padded + sum(_regions_padded(m) for m in self._models.values())

    def close(self) -> None:
        """Release every loaded model (the pool stays usable: a later get loads again)."""
        for key in list(self._models):
            self._release(key)


def weight_bytes(model: Model) -> int | None:
    """Bytes of a loaded model's weights (params x bytes per parameter of its dtype); None when unknown
    or held elsewhere (a served model)."""
    info = model.info
    per = DTYPE_BYTES.get(info.dtype)
    if info.params is None or per is None or info.device == "remote":
        return None
    return info.params * per


def _answers_cut(model: Model) -> int:
    return int(getattr(model, "answers_cut", 0))  # optional: only adapters that cap answers count


def _regions_padded(model: Model) -> int:
    return int(getattr(model, "regions_padded", 0))  # optional: only region readers count


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
    partners: dict[str, Sample] = {}
    if len({image for _, image in items}) >= 2:
        seed = derive_seed(run_seed, f"{cell.dataset.fingerprint}#partners", cell.condition.id)
        by_id = {s.sample_id: s for s in cell.samples}
        partners = {sid: by_id[p] for sid, p in controls.swap_partners(items, seed).items()}
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
    float bits, on its batch-mates), so a recomputed record equals a fresh run's exactly; a remote
    model answers each request alone and runs only the wanted positions."""
    local = model.info.device != "remote"
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


def execute(
    plan: Plan,
    store: Store,
    pool: ModelPool,
    run_seed: int,
    strict: bool,
    quiet: bool = False,
    on_model_done: Callable[[ModelConfig, Model], None] | None = None,
    workers: int = 1,
) -> ExecStats:
    """Run every batch of the plan that the store does not already hold.

    on_model_done(cfg, model) runs after a model's last batch, before it is released (e.g. to
    profile it while its weights are loaded). workers: threads that prepare a local model's next
    batches (decode, perturb) while it runs the current one."""
    stats = ExecStats()
    # this run's images, swap partners, galleries and features (kept in the store where cheap)
    # perturbed images are kept beside the store, so a model planned after the memory moved on, or a
    # rerun adding a model, reads them back instead of corrupting every image again
    images = ImageCache(disk=PerturbedStore(store.path.parent / "perturbed"))
    ctx = ExecutionContext(images=images, features=StoredFeatures(store))
    # (cell, its fixed batch, the positions of that batch to (re)write)
    todo: list[tuple[Cell, list[int], set[int]]] = []
    stamps: dict[str, dict[str, str]] = {}
    for cell in plan.cells:
        store.describe_cell(cell.key, cell.describe())
        stamps[cell.key] = input_stamps(cell, run_seed, swap_partners(cell, run_seed, ctx.partners))
        due = pending(cell, store, stamps[cell.key], plan.retry_failed)
        stats.stale += due.stale
        stats.retried += due.retried
        missing = set(due.positions)
        for pos in batches(cell, cell.model.batch_size):
            if any(i in missing for i in pos):
                todo.append((cell, pos, {i for i in pos if i in missing}))
    left_out: set[str] = set()  # cells whose inputs the task cannot use: named in plan.skipped
    total = sum(len(w) for _, _, w in todo)
    # every model a cell loads (its checkpoint and helpers) is done after the last batch that uses it
    last_use = {m.load_key(): k for k, (c, _, _) in enumerate(todo) for m in c.models}
    with (
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            disable=quiet or total == 0,
            transient=True,
        ) as progress,
        closing(Ahead[list[Record]]()) as ahead,
        closing(Ahead[Inputs](workers, "argus-inputs")) as prefetch,
    ):
        bar = progress.add_task("evaluating", total=total)
        dead: set[str] = set()  # checkpoints that failed to load here (planned from a stored model info)
        for k, (cell, pos, wanted) in enumerate(todo):
            progress.update(
                bar, description=f"{cell.model.name} {cell.task.name} {cell.dataset.name} {cell.condition.id}"
            )
            if cell.model.load_key() in dead:
                progress.advance(bar, len(wanted))
                continue
            try:
                model = pool.get(cell.model)
                helpers = [pool.get(h) for h in cell.helpers]
                bind_feature_cache(model, ctx.features)
            except LOAD_ERRORS as e:
                if strict:
                    raise
                dead.add(cell.model.load_key())
                plan.not_loadable(cell.model, redact_text(str(e)))
                progress.advance(bar, len(wanted))
                continue
            keys = [m.load_key() for m in cell.models]

            def eligible(j: int, keys: list[str] = keys) -> bool:
                return (
                    j < len(todo)
                    and todo[j][0].key not in left_out
                    and keys == [m.load_key() for m in todo[j][0].models]
                )

            def work(j: int, model: Model = model, helpers: list[Model] = helpers) -> list[Record]:
                c, p, w = todo[j]
                return rerun_in_batch(c, model, p, w, run_seed, ctx, helpers)

            def inputs_of(j: int) -> Inputs:
                return prepare_batch(todo[j][0], todo[j][1], run_seed, ctx)

            width = window([model, *helpers], len(pos))
            # a served model's next batches go out while this one is in flight (runner/execute/ahead.py); a
            # local model's next batches are decoded and perturbed while it runs this one
            ahead.fill(k, width, eligible, work)
            if width == 1 and model.info.device != "remote":
                prefetch.fill(k, workers + 1, eligible, inputs_of)
            sent, ready = ahead.take(k), prefetch.take(k)
            if cell.key in left_out:
                records = []
            else:
                try:
                    if sent is not None:
                        records = sent.result()
                    elif ready is not None:
                        c, p, w = todo[k]
                        records = rerun_in_batch(c, model, p, w, run_seed, ctx, helpers, ready.result())
                    else:
                        records = work(k)
                except CapabilityError as e:  # e.g. a substitute protocol the dataset gives no inputs
                    left_out.add(cell.key)
                    plan.leave_out(cell, str(e))
                    records = []
            failed = [r for r in records if r.error is not None]
            if failed and strict:
                raise StrictModeError(
                    f"sample {failed[0].sample_id} failed ({failed[0].error}); --strict is set"
                )
            if records:
                store.write(cell.key, records, stamps[cell.key])
            stats.records_written += len(records)
            stats.failed += len(failed)
            progress.advance(bar, len(wanted))
            if last_use[cell.model.load_key()] == k:
                stats.models_loaded.append(cell.model.name)
                if on_model_done is not None:
                    on_model_done(cell.model, model)
            for m in cell.models:
                if last_use[m.load_key()] == k:
                    pool.done(m)  # released, or kept for the timing trials where the pool parks it
    stats.forward_calls = pool.forward_calls
    stats.answers_cut = pool.answers_cut
    stats.call_logs = pool.call_logs
    stats.regions_padded = pool.regions_padded
    stats.inputs = images.to_json()
    return stats

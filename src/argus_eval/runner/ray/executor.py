"""The Ray executor: a plan's missing batches run on model actors across a cluster; the driver writes.

What runs where:
- driver (this process): plans shards from the store's done_ids, checks the cluster, writes every
  record with store.write (one transaction per batch, as shards come back), counts and reports progress.
- model actors (one or more per model, alive while that model has work): load the model themselves
  through the pool's loader, decode and perturb images (run_batch, as the local executor does) and infer.
A shard is whole fixed batches of one cell (the local executor's batch boundaries), so records are
identical to a local run's. A worker lost mid-run loses only its in-flight shards: Ray restarts the actor
and retries them, else the driver resubmits them to another replica, else the run stops with an
ExecutorError and a rerun completes only what the store is missing.

on_model_done is not called: weights live on the workers. The pipeline's profile_plan then measures
any model whose profile is missing on the driver's hardware (so efficiency figures describe the driver).
"""

from __future__ import annotations

import secrets
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from argus_eval.errors import ArgusError, ConfigError, ExecutorError, StrictModeError
from argus_eval.models.secrets import redact_text
from argus_eval.models.spec import ModelConfig
from argus_eval.runner.execute.execution import ExecutionRequest
from argus_eval.runner.execute.local import ExecStats, batches, swap_partners
from argus_eval.runner.execute.pool import ModelLoader
from argus_eval.runner.execute.stamps import input_stamps, pending
from argus_eval.runner.plan.plan import Cell, Plan
from argus_eval.runner.ray.cluster import check_resources, check_versions, connected
from argus_eval.runner.ray.options import RayOptions, ResourceRequest, request_for
from argus_eval.runner.ray.worker import ModelWorker, ShardResult
from argus_eval.runner.store import Store

# Shards queued per actor: one running and one waiting, so an actor never idles on the driver.
IN_FLIGHT_PER_ACTOR = 2


@dataclass
class Shard:
    """Whole fixed batches of one cell, run by one actor call, and the positions of each to (re)write."""

    cell: Cell
    batches: list[list[int]]
    tries: int = 0
    stamps: dict[str, str] = field(default_factory=dict)  # input stamps of the cell's samples
    wanted: list[list[int]] = field(default_factory=list)  # per batch: positions missing, stale or failed

    @property
    def size(self) -> int:
        return sum(len(w) for w in self.wanted)


def plan_shards(
    plan: Plan, store: Store, shard_size: int, seed: int = 0, stats: ExecStats | None = None
) -> list[Shard]:
    """The batches of every cell with a missing, stale or (when retrying) failed record, as the local
    executor forms them, grouped shard_size at a time; stats counts the stale and retried records."""
    out: list[Shard] = []
    for cell in plan.cells:
        store.describe_cell(cell.key, cell.describe())
        stamps = dict(input_stamps(cell, seed, swap_partners(cell, seed)))  # shipped to the workers
        due = pending(cell, store, stamps, plan.retry_failed)
        if stats is not None:
            stats.stale += due.stale
            stats.retried += due.retried
        wanted = set(due.positions)
        full = [pos for pos in batches(cell, cell.model.batch_size) if any(i in wanted for i in pos)]
        per = [[i for i in pos if i in wanted] for pos in full]
        out.extend(
            Shard(cell, full[s : s + shard_size], stamps=stamps, wanted=per[s : s + shard_size])
            for s in range(0, len(full), shard_size)
        )
    return out


@dataclass
class _ModelRun:
    """The actors of one model (one checkpoint: a composite model has one run per checkpoint) and the
    shards still to give them."""

    cfg: ModelConfig
    queue: deque[Shard]
    actors: list[Any] = field(default_factory=list)
    alive: list[bool] = field(default_factory=list)
    busy: list[int] = field(default_factory=list)


class _Driver:
    """Hands shards to model actors and writes what comes back; at most concurrent_models alive at once."""

    def __init__(
        self,
        ray: Any,
        opts: RayOptions,
        requests: Mapping[str, ResourceRequest],
        loader: ModelLoader,
        store: Store,
        run_seed: int,
        strict: bool,
    ) -> None:
        self.ray, self.opts, self.requests, self.loader = ray, opts, requests, loader
        self.store, self.run_seed, self.strict = store, run_seed, strict
        self.worker_cls = ray.remote(ModelWorker)
        self.token = secrets.token_hex(4)
        self.started = 0
        self.cell_refs: dict[str, Any] = {}
        self.left_out: list[tuple[Cell, str]] = []  # cells a worker found it cannot run, and why
        self.inflight: dict[Any, tuple[_ModelRun, int, Shard]] = {}
        self.stats = ExecStats()

    def run(self, shards: list[Shard], advance: Callable[[Shard, int], None]) -> ExecStats:
        waiting: dict[str, _ModelRun] = {}
        for s in shards:
            waiting.setdefault(s.cell.model.load_key(), _ModelRun(s.cell.model, deque())).queue.append(s)
        active: list[_ModelRun] = []
        try:
            while waiting or active:
                while waiting and len(active) < self.opts.concurrent_models:
                    active.append(self._start(waiting.pop(next(iter(waiting)))))
                for m in active:
                    self._dispatch(m)
                [ref], _ = self.ray.wait(list(self.inflight), num_returns=1)
                m, idx, shard = self.inflight.pop(ref)
                m.busy[idx] -= 1
                result = self._result(ref, m, idx, shard)
                if result is not None:
                    self._write(shard, result, advance)
                if not m.queue and not any(m.busy):
                    self._stop(m)
                    active.remove(m)
                    self.stats.models_loaded.append(m.cfg.name)
        finally:
            for m in active:
                self._stop(m)
        return self.stats

    def _start(self, m: _ModelRun) -> _ModelRun:
        req = self.requests[m.cfg.load_key()]
        self.started += 1  # in the actor's name: a composite model's checkpoints run as separate actors
        for i in range(req.workers):
            actor = self.worker_cls.options(
                **req.actor_options(),
                name=f"argus-eval:{self.token}:{self.started}:{m.cfg.name}:{i}",
                max_restarts=self.opts.max_restarts,
                max_task_retries=self.opts.max_task_retries,
            ).remote(m.cfg, self.loader)
            m.actors.append(actor)
            m.alive.append(True)
            m.busy.append(0)
        return m

    def _stop(self, m: _ModelRun) -> None:
        for actor in m.actors:
            self.ray.kill(actor, no_restart=True)
        m.alive = [False] * len(m.actors)

    def _dispatch(self, m: _ModelRun) -> None:
        for idx, actor in enumerate(m.actors):
            while m.queue and m.alive[idx] and m.busy[idx] < IN_FLIGHT_PER_ACTOR:
                shard = m.queue.popleft()
                key = shard.cell.key
                if key not in self.cell_refs:
                    self.cell_refs[key] = self.ray.put(shard.cell)
                ref = actor.run_shard.remote(
                    key, [self.cell_refs[key]], shard.batches, self.run_seed, shard.wanted
                )
                self.inflight[ref] = (m, idx, shard)
                m.busy[idx] += 1

    def _result(self, ref: Any, m: _ModelRun, idx: int, shard: Shard) -> ShardResult | None:
        """The shard's records; None when its actor died and the shard went back to the queue."""
        exc = self.ray.exceptions
        try:
            result: ShardResult = self.ray.get(ref)
        except exc.RayActorError as e:
            if isinstance(e, exc.ActorDiedError):
                m.alive[idx] = False
            shard.tries += 1
            name = m.cfg.name
            if not any(m.alive):
                raise ExecutorError(
                    f"every Ray worker of model {name!r} died ({type(e).__name__}); "
                    f"{self.stats.records_written} records were written: rerun to complete the rest"
                ) from None
            if shard.tries > self.opts.shard_retries:
                raise ExecutorError(
                    f"a shard of cell {shard.cell.key} ({name}) lost its worker {shard.tries} times "
                    "(shard_retries); rerun to complete the rest"
                ) from None
            m.queue.appendleft(shard)
            return None
        except exc.RayTaskError as e:
            # The worker raised: a user-facing error (a model that cannot load) reads as it would locally.
            if isinstance(e.cause, ArgusError):
                raise e.cause from None
            raise
        return result

    def _write(self, shard: Shard, result: ShardResult, advance: Callable[[Shard, int], None]) -> None:
        self.stats.remote_forward_calls += result.forward_calls
        if result.left_out is not None:
            self.left_out.append((shard.cell, result.left_out))
            advance(shard, shard.size)
            return
        for pos, records in zip(shard.wanted, result.batches, strict=True):
            failed = [r for r in records if r.error is not None]
            if failed and self.strict:
                raise StrictModeError(
                    f"sample {failed[0].sample_id} failed ({failed[0].error}); --strict is set"
                )
            self.store.write(shard.cell.key, records, shard.stamps)
            self.stats.records_written += len(records)
            self.stats.failed += len(failed)
            advance(shard, len(pos))


def _requests(ray: Any, opts: RayOptions, models: list[ModelConfig]) -> dict[str, ResourceRequest]:
    """ModelConfig.load_key -> the resource request of that checkpoint's actors."""
    has_gpu = ray.cluster_resources().get("GPU", 0) > 0
    return {m.load_key(): request_for(opts, m, has_gpu) for m in models}


def _label(m: ModelConfig, models: list[ModelConfig]) -> str:
    """How errors name a checkpoint's actors: the model's name, plus the spec when it has several."""
    several = sum(o.name == m.name for o in models) > 1
    return f"{m.name} ({redact_text(m.spec)})" if several else m.name


def ray_executor(request: ExecutionRequest) -> ExecStats:
    """Run the plan's missing batches on a Ray cluster (see the module docstring)."""
    plan, store, pool, run_seed = request.plan, request.store, request.pool, request.run_seed
    strict, quiet = request.strict, request.quiet
    opts = request.options
    if not isinstance(opts, RayOptions):  # the registry's entry parsed them with this model
        raise TypeError(f"the Ray executor takes RayOptions, not {type(opts).__name__}")
    names = {c.model.name for c in plan.cells}
    unknown = sorted(set(opts.models) - names)
    if unknown:
        raise ConfigError(f"executor_options.models: {unknown} are not models of this run ({sorted(names)})")
    counted = ExecStats()
    shards = plan_shards(plan, store, opts.shard_size, run_seed, counted)
    if not shards:
        return counted  # a fully cached rerun starts no cluster
    pool.close()  # planning may have loaded models here; workers load their own
    models = list({s.cell.model.load_key(): s.cell.model for s in shards}.values())
    total = sum(s.size for s in shards)
    with connected(opts, quiet) as ray:
        requests = _requests(ray, opts, models)
        check_resources(ray, {_label(m, models): requests[m.load_key()] for m in models})
        check_versions(ray, opts.startup_timeout_s)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            disable=quiet,
            transient=True,
        ) as progress:
            bar = progress.add_task("evaluating on Ray", total=total)

            def advance(shard: Shard, n: int) -> None:
                c = shard.cell
                progress.update(
                    bar,
                    advance=n,
                    description=f"{c.model.name} {c.task.name} {c.dataset.name} {c.condition.id}",
                )

            driver = _Driver(ray, opts, requests, pool.loader, store, run_seed, strict)
            stats = driver.run(shards, advance)
    stats.stale, stats.retried = counted.stale, counted.retried
    for cell, reason in driver.left_out:
        plan.leave_out(cell, reason)
    return stats

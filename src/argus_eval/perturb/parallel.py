"""Corrupt many images at once in a spawn process pool, equal to the serial path bit for bit.

A module of its own, above conditions.py and image.py, so that neither imports the other at run time.
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import suppress
from multiprocessing import get_context

import numpy as np

from argus_eval.errors import PerturbationError
from argus_eval.perturb.conditions import Condition, apply_image
from argus_eval.perturb.image import REFERENCE_MIN_SIDE, corrupt
from argus_eval.perturb.kinds import CONDITION_KINDS, ConditionKind, register_kind


def _apply_job(job: tuple[np.ndarray, Condition, int]) -> np.ndarray:
    image, condition, seed = job
    return apply_image(condition, image, seed)


def corrupt_many(
    images: Sequence[np.ndarray],
    conditions: Sequence[Condition],
    seeds: Sequence[int],
    processes: int = 1,
    executor: Executor | None = None,
) -> list[np.ndarray]:
    """Apply conditions[i] with seeds[i] to images[i] for every i; processes > 1 uses a spawn process pool.

    Results equal the serial path exactly (every call is seeded on its own). Clean and text conditions
    return the image unchanged. A new pool costs each worker seconds (imports, numba compiling
    glass_blur), so for many batches pass a long-lived `executor` (from `make_pool`) instead.
    """
    if not len(images) == len(conditions) == len(seeds):
        raise PerturbationError(
            f"corrupt_many needs as many conditions and seeds as images: "
            f"{len(images)} images, {len(conditions)} conditions, {len(seeds)} seeds"
        )
    jobs = list(zip(images, conditions, seeds, strict=True))
    if executor is not None:
        return list(executor.map(_apply_job, jobs, chunksize=max(1, len(jobs) // (max(1, processes) * 4))))
    if processes <= 1 or len(jobs) <= 1:
        return [_apply_job(j) for j in jobs]
    workers = min(processes, len(jobs))
    with make_pool(workers) as pool:
        return list(pool.map(_apply_job, jobs, chunksize=max(1, len(jobs) // (workers * 4))))


def make_pool(
    processes: int, warm: bool = False, initializer: Callable[[], None] | None = None
) -> ProcessPoolExecutor:
    """A spawn-context process pool for corrupt_many; the caller closes it (use it as a context manager).

    warm=True makes each worker import the corruption library and compile glass_blur as it starts;
    initializer, if given, runs in each worker instead.
    """
    # spawn, not fork: safe beside threads (torch, numba) and the same on every platform.
    return ProcessPoolExecutor(
        max_workers=max(1, processes),
        mp_context=get_context("spawn"),
        initializer=initializer or (_warm_worker if warm else None),
    )


def _warm_worker() -> None:
    with suppress(PerturbationError):  # the library is missing: the first real call reports it
        corrupt(np.zeros((REFERENCE_MIN_SIDE,) * 2 + (3,), np.uint8), "glass_blur", 1, 0)


_DIED = (
    "a worker process died while applying {cid} (killed, or out of memory) and again when it was "
    "retried alone; this sample failed on its own: rerun to complete it, or set input_processes: false"
)


def _apply_kind(job: tuple[ConditionKind, Condition, np.ndarray, int]) -> np.ndarray | None:
    """In a worker: the kind's image (None when it is the image given: the parent keeps its own)."""
    behaviour, condition, image, seed = job
    if condition.kind not in CONDITION_KINDS.names():
        register_kind(behaviour)  # registered at run time in the parent (not by an import or plugin)
    out = behaviour.apply_image(condition, image, seed)
    return None if out is image else out


def _quiet_worker() -> None:
    # one BLAS/OpenMP thread per worker: the workers are the parallelism (one per input thread). The
    # corruption library is imported first, so that the pools its scipy brings are limited too.
    from threadpoolctl import threadpool_limits

    with suppress(ImportError):  # missing: the first corruption reports it, naming the extra
        import imagecorruptions  # noqa: F401
    threadpool_limits(limits=1)


class CorruptionProcesses:
    """A run's corruptions computed in spawn worker processes, on behalf of its input threads.

    Why processes: the ImageNet-C code draws from NumPy's global random state, so in threads every
    seeded corruption holds one lock (perturb/image.py) and two cores did the work of 1.3. Each worker
    has its own state, seeded per call as in the serial path, so the pixels are the same bit for bit.
    The pool starts at the first corruption (a run with none pays nothing). A kind whose object cannot
    be pickled (one made inside a function) is applied in the calling thread, as without workers.
    A worker that dies fails only what it was computing: the pool is replaced, each job it held is
    retried alone in a fresh process, and one that kills that one too is a PerturbationError for its
    sample (a failure record, which a rerun retries)."""

    def __init__(self, processes: int) -> None:
        self.processes = max(1, processes)
        self.deaths = 0  # worker pools that broke (a worker killed, or out of memory)
        self.retried_alone = 0  # jobs run again alone after their pool broke
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._shippable: dict[str, bool] = {}

    def apply(self, condition: Condition, image: np.ndarray, seed: int) -> np.ndarray:
        """condition's image made from image with seed, equal to condition.apply_image(image, seed)."""
        behaviour = condition.behaviour
        if not self._can_ship(condition.kind, behaviour):
            return condition.apply_image(image, seed)
        job = (behaviour, condition, image, seed)
        pool = self._current()
        try:
            out = pool.submit(_apply_kind, job).result()
        except BrokenProcessPool:
            self._replace(pool)
            out = self._alone(job)
        return image if out is None else out

    def _can_ship(self, kind: str, behaviour: ConditionKind) -> bool:
        known = self._shippable.get(kind)
        if known is None:
            try:
                pickle.dumps(behaviour)
                known = True
            except (pickle.PicklingError, AttributeError, TypeError):
                known = False
            self._shippable[kind] = known
        return known

    def _current(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = make_pool(self.processes, initializer=_quiet_worker)
            return self._pool

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        """Drop the broken pool once, whichever of its waiting threads gets here first."""
        with self._lock:
            if self._pool is broken:
                self._pool = None
                self.deaths += 1
        broken.shutdown(wait=False, cancel_futures=True)

    def _alone(self, job: tuple[ConditionKind, Condition, np.ndarray, int]) -> np.ndarray | None:
        with self._lock:
            self.retried_alone += 1
        with make_pool(1, initializer=_quiet_worker) as solo:
            try:
                return solo.submit(_apply_kind, job).result()
            except BrokenProcessPool:
                with self._lock:
                    self.deaths += 1
                raise PerturbationError(_DIED.format(cid=job[1].id)) from None

    def close(self) -> None:
        """Stop the workers (the run's end)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def to_json(self) -> dict[str, int]:
        """What run_log.json says of the workers."""
        return {
            "processes": self.processes,
            "worker_deaths": self.deaths,
            "retried_alone": self.retried_alone,
        }

"""Corrupt many images at once in a spawn process pool, equal to the serial path bit for bit.

A module of its own, above conditions.py and image.py, so that neither imports the other at run time.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import suppress
from multiprocessing import get_context

import numpy as np

from argus_eval.errors import PerturbationError
from argus_eval.perturb.conditions import Condition, apply_image
from argus_eval.perturb.image import REFERENCE_MIN_SIDE, corrupt


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


def make_pool(processes: int, warm: bool = False) -> ProcessPoolExecutor:
    """A spawn-context process pool for corrupt_many; the caller closes it (use it as a context manager).

    warm=True makes each worker import the corruption library and compile glass_blur as it starts.
    """
    # spawn, not fork: safe beside threads (torch, numba) and the same on every platform.
    return ProcessPoolExecutor(
        max_workers=max(1, processes),
        mp_context=get_context("spawn"),
        initializer=_warm_worker if warm else None,
    )


def _warm_worker() -> None:
    with suppress(PerturbationError):  # the library is missing: the first real call reports it
        corrupt(np.zeros((REFERENCE_MIN_SIDE,) * 2 + (3,), np.uint8), "glass_blur", 1, 0)

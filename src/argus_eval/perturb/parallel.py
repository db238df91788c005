"""Corrupt many images at once in the corruption worker processes, equal to the serial path bit for bit.

The workers are CorruptionProcesses' (perturb/processes.py), not a multiprocessing pool: a spawned
process imports the caller's __main__, so a script without an `if __name__ == "__main__":` guard ran
itself again in every worker and failed there. A module of its own, above conditions.py and image.py, so
that neither imports the other at run time.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext, suppress

import numpy as np

from argus_eval.errors import PerturbationError
from argus_eval.perturb.conditions import Condition
from argus_eval.perturb.image import REFERENCE_MIN_SIDE
from argus_eval.perturb.processes import CorruptionProcesses


def corrupt_many(
    images: Sequence[np.ndarray],
    conditions: Sequence[Condition],
    seeds: Sequence[int],
    processes: int = 1,
    pool: CorruptionProcesses | None = None,
) -> list[np.ndarray]:
    """Apply conditions[i] with seeds[i] to images[i] for every i; processes > 1 uses that many worker
    processes (perturb/processes.py), which never import the caller's __main__.

    Results equal the serial path exactly (every call is seeded on its own). Clean and text conditions
    return the image unchanged. A worker costs about a second to start (imports; numba compiling
    glass_blur the first time it is used), so for many batches pass a long-lived `pool` (from
    `make_pool`, which uses its own number of processes) instead.
    """
    if not len(images) == len(conditions) == len(seeds):
        raise PerturbationError(
            f"corrupt_many needs as many conditions and seeds as images: "
            f"{len(images)} images, {len(conditions)} conditions, {len(seeds)} seeds"
        )
    jobs = list(zip(images, conditions, seeds, strict=True))
    if pool is None and (processes <= 1 or len(jobs) <= 1):
        return [condition.apply_image(image, seed) for image, condition, seed in jobs]
    with nullcontext(pool) if pool is not None else make_pool(min(processes, len(jobs))) as using:

        def apply(job: tuple[np.ndarray, Condition, int]) -> np.ndarray:
            image, condition, seed = job
            if not condition.shows_perturbed_image:  # clean, text, a blank control: nothing to send
                return condition.apply_image(image, seed)
            return using.apply(condition, image, seed)

        # one thread per worker: each waits for its worker's reply while the others send theirs
        with ThreadPoolExecutor(using.processes, thread_name_prefix="argus-corrupt-many") as threads:
            return list(threads.map(apply, jobs))


def make_pool(processes: int, warm: bool = False) -> CorruptionProcesses:
    """Worker processes for corrupt_many; the caller closes them (use it as a context manager).

    warm=True starts every worker now and has each compile glass_blur (numba, seconds), so that the first
    calls do not pay for it.
    """
    pool = CorruptionProcesses(processes)
    if warm:
        glass = Condition("image", "glass_blur", 1)
        image = np.zeros((REFERENCE_MIN_SIDE, REFERENCE_MIN_SIDE, 3), np.uint8)

        def compile_once() -> None:
            with suppress(PerturbationError):  # the library is missing: the first real call reports it
                pool.apply(glass, image, 0)

        # at once: each thread holds its worker until it is done, so every slot starts a worker
        starting = [threading.Thread(target=compile_once) for _ in range(pool.processes)]
        for thread in starting:
            thread.start()
        for thread in starting:
            thread.join()
    return pool

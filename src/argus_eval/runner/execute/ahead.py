"""Batches sent ahead of their turn, for models that take more than one batch in flight (served ones).

A served model answers each request alone, so a batch is only a unit of bookkeeping: the runner would
otherwise prepare a batch, send it, wait for its slowest answer and only then prepare the next, leaving
the server's slots empty at every batch boundary. Here the next batches are prepared and sent from
threads while the current one is in flight, enough of them to fill the model's `max_in_flight`; the
runner still takes their records one batch at a time, in plan order, so what it writes and counts is
the same as when it runs them one after another. Local models declare no `max_in_flight` and never
run here: their kernels already keep the machine busy, and their adapters are not made for threads.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

MAX_AHEAD = 64  # batches in flight at most, whatever a model's concurrency says

T = TypeVar("T")


def window(models: Sequence[object], batch_len: int) -> int:
    """How many batches of these models (a cell's checkpoint and its helpers) may be in flight at once:
    1 unless every one of them declares max_in_flight, else enough batches to fill the smallest, plus
    one being prepared."""
    limits = [getattr(m, "max_in_flight", None) for m in models]
    if not limits or batch_len < 1 or any(not isinstance(n, int) or n < 1 for n in limits):
        return 1
    smallest = min(n for n in limits if isinstance(n, int))
    return min(MAX_AHEAD, math.ceil(smallest / batch_len) + 1)


class Ahead(Generic[T]):
    """Futures of the batches (by their index in the run's list of batches) sent before their turn:
    their records (served models), or their prepared inputs (runner/execute/local.py). threads: the most
    that run at once."""

    def __init__(self, threads: int = MAX_AHEAD, name: str = "argus-ahead") -> None:
        self._threads, self._name = threads, name
        self._pool: ThreadPoolExecutor | None = None
        self._futures: dict[int, Future[T]] = {}

    def fill(self, k: int, width: int, eligible: Callable[[int], bool], work: Callable[[int], T]) -> None:
        """Send batches k .. k+width-1 not yet sent, stopping at the first that is not eligible (another
        model, or a cell left out)."""
        if width <= 1:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix=self._name)
        for j in range(k, k + width):
            if j in self._futures:
                continue
            if not eligible(j):
                break
            self._futures[j] = self._pool.submit(work, j)

    def take(self, k: int) -> Future[T] | None:
        """Batch k's future, if it was sent ahead (then it is the caller's)."""
        return self._futures.pop(k, None)

    def close(self) -> None:
        """Drop what was not taken (a strict run that stopped): cancel what has not started, wait for
        what has."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._futures.clear()

"""The store's writes of a local run, on one thread behind the model.

Why: a batch's records cost milliseconds to serialise and commit (JSON, array headers, a SQLite
transaction), and on the model's thread that time adds to every batch: with a model that keeps an
accelerator busy, it is time the accelerator waits. Here they are written in order, one batch at a
time, while the model runs the next. At most `depth` batches wait (memory stays bounded); a failed
write (a full disk) is raised on the model's thread at its next batch or at the end, and close() waits
for every write, so nothing is lost and the store is complete when the executor returns.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from argus_eval.runner.store import Store
from argus_eval.tasks.records import Record

DEPTH = 4  # batches queued at most before the model's thread waits for the writer


class BatchWriter:
    """Store.write of each batch, in submission order, on one thread."""

    def __init__(self, store: Store, depth: int = DEPTH) -> None:
        self._store, self._depth = store, max(1, depth)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="argus-writer")
        self._queued: deque[Future[None]] = deque()
        self._raised = False  # a failed write was raised already: the later ones (the same disk) are not

    def write(self, cell: str, records: Sequence[Record], stamps: Mapping[str, str]) -> None:
        """Queue one batch's records (stamps: the cell's input stamps, read when it is written)."""
        while self._queued and (self._queued[0].done() or len(self._queued) >= self._depth):
            self._outcome(self._queued.popleft())  # a failed write surfaces here, on the caller's thread
        self._queued.append(self._pool.submit(self._store.write, cell, list(records), stamps))

    def close(self) -> None:
        """Wait for every queued write; the first failure is raised (the later ones were still run), unless
        write() raised one already: the run is stopping on it, and the same full disk is told once."""
        try:
            while self._queued:
                done = self._queued.popleft()
                if self._raised:
                    done.exception()  # waited for, its failure not raised again
                else:
                    self._outcome(done)
        finally:
            self._pool.shutdown(wait=True)

    def _outcome(self, done: Future[None]) -> None:
        try:
            done.result()
        except Exception:
            self._raised = True
            raise

"""A run's corruptions computed in worker processes on behalf of its input threads, equal to the serial
path bit for bit (CorruptionProcesses; each worker is a perturb/worker_process.py handle).

A module of its own, above conditions.py and image.py, so that neither imports the other at run time.
"""

from __future__ import annotations

import pickle
import sys
import threading
import warnings
from contextlib import suppress
from dataclasses import dataclass
from enum import Enum
from queue import Empty, LifoQueue
from typing import Any, cast

import numpy as np

from argus_eval.errors import ArgusError, PerturbationError
from argus_eval.perturb.conditions import Condition
from argus_eval.perturb.worker import Frame, encode, meaning, registered
from argus_eval.perturb.worker_process import (
    WorkerLost,
    WorkerNotStarted,
    WorkerProcess,
    WorkerTraceback,
)

_LOST = (
    "a worker process {how} while applying {cid}, and again when it was retried alone; this sample failed "
    "on its own: rerun to complete it, or set input_processes: false (it {ended})"
)
_DIED = "died (killed, or out of memory)"
_BROKE = "broke its reply pipe"


class CorruptionWorkerWarning(UserWarning):
    """The corruption worker processes could not start: the run computes its corruptions in its threads."""


@dataclass
class _Meaning:
    """What a condition's name means here (perturb/worker.py's meaning), found for these registered
    objects: a name registered again (replace=True) is another object, and is found afresh."""

    behaviour: object  # the condition's kind
    source: object  # what meaning read (perturb/worker.py's registered)
    said: str | None
    local: bool = False  # it means something else in a worker: applied in the calling thread


class _Slot(Enum):
    EMPTY = "a worker not started yet (started by the thread that takes it)"
    SHUT = "closed, or workers cannot start: apply in the calling thread (put back for the next waiter)"


class CorruptionProcesses:
    """A run's corruptions computed in worker processes, on behalf of its input threads.

    Why processes: the ImageNet-C code draws from NumPy's global random state, so in threads every
    seeded corruption holds one lock (perturb/image.py) and two cores did the work of 1.3. Each worker
    has its own state, seeded per call as in the serial path, so the pixels are the same bit for bit.
    A worker is `python -m argus_eval.perturb.worker` (perturb/worker.py), not a multiprocessing one, so
    it never imports the caller's __main__: a script without a main guard works. A calling thread takes
    an idle worker, sends it one job over its pipe and gives it back with the reply. Workers start at the
    first corruptions that need them, up to `processes` (a run with none pays nothing), each with one
    BLAS/OpenMP thread. A kind that cannot be pickled, or not loaded in a worker (defined in __main__ or
    inside a function), is applied in the calling thread, as without workers, and so is a condition whose
    name means something else in a worker (an image corruption the caller registered or replaced at run
    time: perturb/worker.py's meaning, found once per name and registered object); what a kind raises in
    a worker is raised in the caller. A worker that dies, or sends a reply header claiming more than a
    reply to its job may take (something in it wrote into its pipe; it is stopped), fails only what it
    was computing: that job is retried alone in a fresh worker, which then replaces the lost one, and a
    job that loses that one too is a PerturbationError for its sample (a failure record, which a rerun
    retries). When no worker can start, corruptions are computed in the calling threads
    (CorruptionWorkerWarning, once; on stderr where a filter makes it an error: it fails no sample).
    A context manager: leaving it closes the workers."""

    def __init__(self, processes: int) -> None:
        self.processes = max(1, processes)
        self.deaths = 0  # workers lost holding a job (killed, out of memory, or stopped for a broken reply)
        self.retried_alone = 0  # jobs run again alone in a fresh worker after theirs was lost
        self.started = 0  # worker processes started
        self.start_failures = 0  # workers that ended before they were ready
        self.in_thread = 0  # corruptions applied in the calling thread (kinds that stay here, no workers)
        self._lock = threading.Lock()
        # idle workers and slots not started; LIFO, so that a warm worker is taken before a slot is started
        self._idle: LifoQueue[WorkerProcess | _Slot] = LifoQueue()
        for _ in range(self.processes):
            self._idle.put(_Slot.EMPTY)
        self._live: set[WorkerProcess] = set()  # started and not yet reaped, idle or held by a thread
        self._local: set[str] = set()  # kinds applied in the calling thread
        # (kind, name): its meaning, sent with each job (fingerprinting a user's function per job was slow)
        self._meanings: dict[tuple[str, str], _Meaning] = {}
        self._closed = False
        self._cannot_start = False

    def apply(self, condition: Condition, image: np.ndarray, seed: int) -> np.ndarray:
        """condition's image made from image with seed, equal to condition.apply_image(image, seed)."""
        if self._closed or self._cannot_start or condition.kind in self._local:
            return self._here(condition, image, seed)
        try:
            behaviour = condition.behaviour
            known = self._meaning(behaviour, condition)
            job = None if known.local else encode((behaviour, condition, image, seed, known.said))
        except Exception:  # pickling runs the kind's own __reduce__: any failure keeps the kind here
            return self._here(condition, image, seed, stays=True)
        if job is None:
            return self._here(condition, image, seed)
        worker = self._take()
        if worker is None:
            return self._here(condition, image, seed)
        reply: tuple[str, Any] | None
        try:
            reply = worker.call(job)
        except WorkerNotStarted:
            self._not_started(worker)
            return self._here(condition, image, seed)
        except WorkerLost:
            reply = None
        except BaseException:  # KeyboardInterrupt while it computes: its reply would answer the next job
            self._abandon(worker)
            raise
        else:
            self._give_back(worker)
        if reply is None:
            if not self._lost(worker):
                return self._here(condition, image, seed)  # closed under it: the run is ending
            reply = self._alone(condition, job)
            if reply is None:
                return self._here(condition, image, seed)
        return self._result(reply, known, condition, image, seed)

    def _meaning(self, behaviour: object, condition: Condition) -> _Meaning:
        """condition's meaning here, found once per (kind, name) and the registered objects it reads."""
        source = registered(behaviour, condition)
        known = self._meanings.get((condition.kind, condition.name))
        if known is None or known.behaviour is not behaviour or known.source is not source:
            known = _Meaning(behaviour, source, meaning(behaviour, condition))
            self._meanings[(condition.kind, condition.name)] = known  # threads at once find the same
        return known

    def _here(self, condition: Condition, image: np.ndarray, seed: int, stays: bool = False) -> np.ndarray:
        with self._lock:
            self.in_thread += 1
            if stays:
                self._local.add(condition.kind)
        return condition.apply_image(image, seed)

    def _result(
        self, reply: tuple[str, Any], known: _Meaning, condition: Condition, image: np.ndarray, seed: int
    ) -> np.ndarray:
        status, payload = reply
        if status == "ok":
            return image if payload is None else cast(np.ndarray, payload)
        if status == "raised":
            blob, text = payload
            try:
                error = pickle.loads(blob) if blob is not None else None
            except Exception:  # its class cannot be loaded here: the serial path raises it itself
                error = None
            if not isinstance(error, Exception):
                return self._here(condition, image, seed)
            if not isinstance(error, ArgusError):  # a kind's bug: show where in the worker it failed
                error.__cause__ = WorkerTraceback(text)
            raise error
        if status == "unknown":  # registered or replaced at run time here: that name alone stays here
            known.local = True  # until it is registered again
            return self._here(condition, image, seed)
        return self._here(condition, image, seed, stays=True)  # "local": it cannot travel

    def _take(self) -> WorkerProcess | None:
        """An idle worker, one started in an empty slot, or None when closed or workers cannot start."""
        item = self._idle.get()
        if item is _Slot.SHUT:
            self._idle.put(item)  # for the next waiting thread
            return None
        return self._start() if item is _Slot.EMPTY else item

    def _start(self) -> WorkerProcess | None:
        with self._lock:
            if self._closed or self._cannot_start:
                return None
            try:
                worker = WorkerProcess()
            except OSError as e:  # no executable, no processes left
                why, first = f"{type(e).__name__}: {e}", self._stop_starting()
            else:
                self._live.add(worker)
                self.started += 1
                return worker
        if first:
            _say_no_workers(why)
        return None

    def _not_started(self, worker: WorkerProcess) -> None:
        how = worker.ended()
        with self._lock:
            self._live.discard(worker)
            first = not self._closed and self._stop_starting()  # else close() stopped it before it was ready
        if first:
            _say_no_workers(how)

    def _stop_starting(self) -> bool:
        """Under the lock: no more workers; the calling threads compute every corruption from now on.
        True the first time: its caller then says why, once, outside the lock."""
        self.start_failures += 1
        if self._cannot_start:
            return False
        self._cannot_start = True
        self._idle.put(_Slot.SHUT)  # wakes the threads waiting for a worker
        return True

    def _lost(self, worker: WorkerProcess) -> bool:
        """Reap a worker lost holding a job (dead, or stopped); False when close() stopped it (no loss)."""
        worker.reap()
        with self._lock:
            if self._closed:
                return False
            self._live.discard(worker)
            self.deaths += 1
            return True

    def _alone(self, condition: Condition, job: Frame) -> tuple[str, Any] | None:
        """job's reply from a fresh worker, which then takes the lost one's place; None when none can start
        (or close() stopped it); PerturbationError when it is lost too."""
        fresh = self._start()
        if fresh is None:
            return None
        with self._lock:
            self.retried_alone += 1
        try:
            reply = fresh.call(job)
        except WorkerNotStarted:
            self._not_started(fresh)
            return None
        except WorkerLost:
            reply = None
        except BaseException:
            self._abandon(fresh)
            raise
        if reply is not None:
            self._give_back(fresh)
            return reply
        if not self._lost(fresh):
            return None
        with self._lock:
            if not self._closed:
                self._idle.put(_Slot.EMPTY)  # the next job starts a worker in its place
        how = _BROKE if fresh.broken else _DIED
        raise PerturbationError(_LOST.format(how=how, cid=condition.id, ended=fresh.ended()))

    def _abandon(self, worker: WorkerProcess) -> None:
        """Kill a worker whose job was interrupted here, and free its slot for a fresh one."""
        worker.kill()
        worker.reap()
        with self._lock:
            if worker in self._live:
                self._live.discard(worker)
                self._idle.put(_Slot.EMPTY)

    def _give_back(self, worker: WorkerProcess) -> None:
        with self._lock:
            if not self._closed:
                self._idle.put(worker)
                return
        worker.reap()  # closed while it worked: it exits at the end of its stdin

    def close(self) -> None:
        """Stop every worker: an idle one at the end of its stdin, one still holding a job (the run is
        ending) is killed and its thread computes that job itself. Later corruptions are computed in the
        calling thread."""
        with self._lock:
            self._closed = True
            workers, self._live = self._live, set()
            idle: list[WorkerProcess] = []
            with suppress(Empty):
                while True:
                    item = self._idle.get_nowait()
                    if isinstance(item, WorkerProcess):
                        idle.append(item)
            self._idle.put(_Slot.SHUT)
        for worker in idle:
            worker.close_input()  # all at once: they exit together
        for worker in workers.difference(idle):
            worker.kill()
        for worker in workers:
            worker.reap()

    def __enter__(self) -> CorruptionProcesses:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def to_json(self) -> dict[str, int]:
        """What run_log.json says of the workers."""
        with self._lock:
            return {
                "processes": self.processes,
                "workers_started": self.started,
                "worker_deaths": self.deaths,
                "retried_alone": self.retried_alone,
                "start_failures": self.start_failures,
                "applied_in_thread": self.in_thread,
            }


def _say_no_workers(why: str) -> None:
    """The one CorruptionWorkerWarning of a CorruptionProcesses, from the thread that found workers cannot
    start. Where a filter makes it an error (-W error, PYTHONWARNINGS=error) or a warning hook fails, it
    is written to stderr instead: raised, it would fail the sample that found it, and the fallback it
    tells of is no error."""
    text = (
        f"corruption worker processes could not start ({why}); the run computes its corruptions in its "
        "input threads (equal, slower); set input_processes: false to not try"
    )
    try:
        warnings.warn(text, CorruptionWorkerWarning, stacklevel=3)
    except Exception:
        with suppress(OSError, ValueError):  # no stderr left to say it on
            print(f"{CorruptionWorkerWarning.__name__}: {text}", file=sys.stderr, flush=True)

"""METEOR 1.5 through the jar shipped inside pycocoevalcap, one JVM per corpus, as pycocoevalcap runs it
(-stdio -l en -norm, -Xmx2G): one SCORE line per image for its statistics, then one EVAL line.

The JVM spends seconds loading the paraphrase table, so MeteorProcess starts it early and the caller does
other work meanwhile. The corpus score is the jar's aggregate over summed statistics; per-segment scores are
returned too (their mean is *not* the corpus score).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import IO

import numpy as np
from numpy.typing import NDArray

from argus_eval.errors import MetricError
from argus_eval.metrics._java import java_executable, pycocoevalcap_file


class MeteorProcess:
    """A running Meteor 1.5 JVM in -stdio mode; score() once, then it exits (unless persistent)."""

    def __init__(self, persistent: bool = False) -> None:
        self.persistent = persistent
        self.warmed = False  # warm_jit has run its synthetic corpus through this JVM
        self._lock = threading.Lock()
        jar = pycocoevalcap_file("meteor/meteor-1.5.jar")
        cmd = [java_executable(), "-jar", "-Xmx2G", str(jar), "-", "-", "-stdio", "-l", "en", "-norm"]
        # cwd is a private temp dir: nothing is ever written into the installed package folder
        self._tmp = tempfile.TemporaryDirectory(prefix="argus-meteor-")
        self._proc = subprocess.Popen(
            cmd,
            cwd=self._tmp.name,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def score(
        self, candidates: Sequence[str], references: Sequence[Sequence[str]]
    ) -> tuple[float, NDArray[np.float64]]:
        """Corpus METEOR and per-segment scores for tokenised candidates and references."""
        try:
            return self.evaluate(self.stats(candidates, references, keep_open=True))
        finally:
            if not self.persistent:
                self.close()

    def stats(
        self, candidates: Sequence[str], references: Sequence[Sequence[str]], keep_open: bool = False
    ) -> list[str]:
        """The jar's SCORE statistics line of each segment (each depends on its segment alone)."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        stdin, stdout = self._proc.stdin, self._proc.stdout
        lines = []
        for cand, refs in zip(candidates, references, strict=True):
            # pycocoevalcap's Meteor._stat cleaning of the hypothesis
            hyp = cand.replace("|||", "").replace("  ", " ")
            lines.append(" ||| ".join(("SCORE", " ||| ".join(refs), hyp)) + "\n")
        with self._exchange(keep_open):
            # a writer thread keeps the pipes from filling up while we read the answers
            writer = threading.Thread(target=_write_all, args=(stdin, "".join(lines).encode()))
            writer.start()
            out = [stdout.readline().decode().strip() for _ in lines]
            writer.join()
        return out

    def evaluate(self, stats: Sequence[str]) -> tuple[float, NDArray[np.float64]]:
        """Per-segment scores and the corpus aggregate over the summed statistics (one EVAL line)."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        stdin, stdout = self._proc.stdin, self._proc.stdout
        with self._exchange(keep_open=True):
            stdin.write(("EVAL ||| " + " ||| ".join(stats) + "\n").encode())
            stdin.flush()
            per = np.array([float(stdout.readline().strip()) for _ in stats], dtype=np.float64)
            corpus = float(stdout.readline().strip())
        return corpus, per

    @contextlib.contextmanager
    def _exchange(self, keep_open: bool) -> Iterator[None]:
        """One locked round trip with the JVM; a failure names the fix and retires the process."""
        self._lock.acquire()
        try:
            yield
        except (ValueError, OSError) as exc:
            self.persistent = False
            self.close()
            raise MetricError(
                f"METEOR jar gave no usable output ({exc}); check Java has 2 GB heap free "
                "or drop METEOR from metrics"
            ) from exc
        except BaseException:
            self.persistent = False  # a failed exchange leaves the stream out of step: never reuse it
            self.close()
            raise
        finally:
            self._lock.release()
            if not keep_open and not self.persistent:
                self.close()

    def alive(self) -> bool:
        return self._proc.poll() is None

    def close(self) -> None:
        """Stop the JVM and remove the temp dir."""
        if self._proc.poll() is None:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._tmp.cleanup()


def _write_all(stream: IO[bytes], data: bytes) -> None:
    stream.write(data)
    stream.flush()


# Segments per extra JVM: below this a second JVM's start (its paraphrase table load) costs more than
# it saves.
SEGMENTS_PER_WORKER = 2000


class MeteorPool:
    """Persistent METEOR JVMs: SCORE statistics of contiguous chunks of the corpus in parallel, then one
    EVAL over all of them in the first JVM. The statistics of a segment depend on that segment only, so
    the result equals one JVM scoring the whole corpus."""

    def __init__(self) -> None:
        self.workers: list[MeteorProcess] = []

    def ensure(self, n: int) -> None:
        """At least n live workers (started now, so they load while the caller tokenises)."""
        self.workers = [w for w in self.workers if w.alive() and w.persistent]
        while len(self.workers) < n:
            proc = MeteorProcess(persistent=True)
            atexit.register(proc.close)
            self.workers.append(proc)

    def score(
        self, candidates: Sequence[str], references: Sequence[Sequence[str]]
    ) -> tuple[float, NDArray[np.float64]]:
        """Corpus METEOR and per-segment scores, as MeteorProcess.score on one JVM."""
        self.ensure(1)
        k = max(1, min(len(self.workers), len(candidates) // SEGMENTS_PER_WORKER))
        bounds = [len(candidates) * i // k for i in range(k + 1)]
        chunks = [(bounds[i], bounds[i + 1]) for i in range(k)]
        with ThreadPoolExecutor(max_workers=k) as ex:
            parts = list(
                ex.map(
                    lambda w_c: w_c[0].stats(
                        candidates[w_c[1][0] : w_c[1][1]], references[w_c[1][0] : w_c[1][1]]
                    ),
                    zip(self.workers, chunks, strict=False),
                )
            )
        return self.workers[0].evaluate([line for part in parts for line in part])


# Cores per METEOR JVM: its paraphrase-table load keeps several GC and compiler threads busy, and on a
# 2-core machine two JVMs starting together took 30 s where one took 13 s.
CORES_PER_WORKER = 4


def available_cores() -> int:
    """Cores this process may run on (its affinity mask, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity call on this platform (macOS)
        return os.cpu_count() or 1


def meteor_workers(n_segments: int) -> int:
    """JVMs worth starting for a corpus: one per SEGMENTS_PER_WORKER segments and CORES_PER_WORKER cores."""
    by_cores = available_cores() // CORES_PER_WORKER
    return max(1, min(by_cores, n_segments // SEGMENTS_PER_WORKER))


_SHARED: list[MeteorPool] = []
_SHARED_LOCK = threading.Lock()


def shared_meteor(n_segments: int = 0) -> MeteorPool:
    """The process's persistent METEOR JVMs, enough for n_segments: their start and paraphrase-table
    load dominate METEOR's cost, and -stdio mode serves any number of SCORE/EVAL rounds (as
    pycocoevalcap's does).

    The pool is sized when it (re)starts: once live (started early by warm_meteor, while the models
    run), a later corpus uses the warm JVMs rather than waiting for a cold one to load."""
    with _SHARED_LOCK:
        if not _SHARED:
            _SHARED.append(MeteorPool())
        pool = _SHARED[0]
        live = sum(1 for w in pool.workers if w.alive() and w.persistent)
        pool.ensure(live or meteor_workers(n_segments))
        return pool


def _warm_corpus(n: int = 200) -> tuple[list[str], list[list[str]]]:
    """A fixed synthetic corpus that makes the JIT compile the scoring paths (a fresh JVM scored its
    first 5,000 segments about 4x slower than its next)."""
    words = ["a", "man", "dog", "woman", "sits", "on", "the", "red", "table", "two", "cats", "running"]
    words += ["near", "with", "of", "is", "street"]
    sents = [" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(5 + i % 7)) for i in range(6 * n)]
    return sents[:n], [sents[n + 5 * i : n + 5 * i + 5] for i in range(n)]


def warm_jit(pool: MeteorPool) -> threading.Thread:
    """Score a synthetic corpus on every worker in a background thread (results dropped): the JVMs
    load and compile while the caller does other work; a real score waits at most for this one."""

    cold = [w for w in pool.workers if not w.warmed]
    for w in cold:
        w.warmed = True  # once per JVM, however many runs in this process warm it

    def work() -> None:
        cands, refs = _warm_corpus()
        with contextlib.suppress(MetricError):  # a JVM that fails here fails again, named, when used
            for w in cold:
                w.evaluate(w.stats(cands, refs))

    thread = threading.Thread(target=work, name="meteor-warm-up", daemon=True)
    thread.start()
    return thread


def close_shared_meteor() -> None:
    """Stop the process's persistent METEOR JVMs (the next shared_meteor starts them afresh)."""
    with _SHARED_LOCK:
        for pool in _SHARED:
            for w in pool.workers:
                w.close()
            pool.workers.clear()

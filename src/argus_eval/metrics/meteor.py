"""METEOR 1.5 through the jar shipped inside pycocoevalcap, one JVM per corpus, as pycocoevalcap runs it
(-stdio -l en -norm, -Xmx2G): one SCORE line per image for its statistics, then one EVAL line.

The JVM spends seconds loading the paraphrase table, so MeteorProcess starts it early and the caller does
other work meanwhile. The corpus score is the jar's aggregate over summed statistics; per-segment scores are
returned too (their mean is *not* the corpus score).
"""

from __future__ import annotations

import atexit
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from typing import IO

import numpy as np
from numpy.typing import NDArray

from argus_eval.errors import MetricError
from argus_eval.metrics._java import java_executable, pycocoevalcap_file


class MeteorProcess:
    """A running Meteor 1.5 JVM in -stdio mode; score() once, then it exits (unless persistent)."""

    def __init__(self, persistent: bool = False) -> None:
        self.persistent = persistent
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
        assert self._proc.stdin is not None and self._proc.stdout is not None
        stdin, stdout = self._proc.stdin, self._proc.stdout
        lines = []
        for cand, refs in zip(candidates, references, strict=True):
            # pycocoevalcap's Meteor._stat cleaning of the hypothesis
            hyp = cand.replace("|||", "").replace("  ", " ")
            lines.append(" ||| ".join(("SCORE", " ||| ".join(refs), hyp)) + "\n")
        self._lock.acquire()
        try:
            # a writer thread keeps the pipes from filling up while we read the answers
            writer = threading.Thread(target=_write_all, args=(stdin, "".join(lines).encode()))
            writer.start()
            stats = [stdout.readline().decode().strip() for _ in lines]
            writer.join()
            stdin.write(("EVAL ||| " + " ||| ".join(stats) + "\n").encode())
            stdin.flush()
            per = np.array([float(stdout.readline().strip()) for _ in lines], dtype=np.float64)
            corpus = float(stdout.readline().strip())
        except (ValueError, OSError) as exc:
            raise MetricError(
                f"METEOR jar gave no usable output ({exc}); check Java has 2 GB heap free "
                "or drop METEOR from metrics"
            ) from exc
        except BaseException:
            self.persistent = False  # a failed exchange leaves the stream out of step: never reuse it
            raise
        finally:
            self._lock.release()
            if not self.persistent:
                self.close()
        return corpus, per

    def alive(self) -> bool:
        return self._proc.poll() is None

    def release(self) -> None:
        """Close unless this is the shared persistent process (callers' error paths use this)."""
        if not self.persistent:
            self.close()

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


_SHARED: list[MeteorProcess] = []
_SHARED_LOCK = threading.Lock()


def shared_meteor() -> MeteorProcess:
    """One persistent METEOR JVM per Python process: its start and paraphrase-table load dominate
    METEOR's cost, and -stdio mode serves any number of SCORE/EVAL rounds (as pycocoevalcap's does)."""
    with _SHARED_LOCK:
        if not _SHARED or not _SHARED[0].alive() or not _SHARED[0].persistent:
            if _SHARED:
                _SHARED[0].close()
                _SHARED.clear()
            proc = MeteorProcess(persistent=True)
            _SHARED.append(proc)
            atexit.register(proc.close)
        return _SHARED[0]

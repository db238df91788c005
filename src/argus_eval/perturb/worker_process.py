"""The parent's handle of one corruption worker process (perturb/worker.py is the other end).

Started as `python -m argus_eval.perturb.worker`, never through multiprocessing: a spawned process
imports the caller's __main__, and a user's script without an `if __name__ == "__main__"` guard would
start the run again in every worker. Its environment limits every numeric library to one thread (the
workers are the parallelism) and carries the caller's sys.path, so that argus_eval, the caller's modules
and plugin kinds import there as they do here.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
from collections import deque
from contextlib import suppress
from typing import IO, Any, cast

from argus_eval.perturb.worker import Frame, decode, read_frame, read_hello, write_frame

# The worker processes are the parallelism: one BLAS/OpenMP/numba thread each, set before numpy loads.
_ONE_THREAD = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMBA_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
_PIPE_BYTES = 2**20  # Linux's default most for an unprivileged process (fs.pipe-max-size)
_STOP_WAIT_S = 5.0  # how long a closed worker may take to finish its job and exit before it is killed


class WorkerLost(Exception):
    """A worker died while it held a job (internal: the job is retried alone)."""


class WorkerNotStarted(Exception):
    """A worker ended before it said it was ready (internal: the run goes on without workers)."""


class WorkerTraceback(Exception):
    """The cause of an exception a kind raised in a worker: where it was raised there."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f"in a corruption worker process:\n{self.text}"


def worker_env() -> dict[str, str]:
    """The parent's environment, one thread per numeric library, and its sys.path as PYTHONPATH (so that
    argus_eval, the caller's modules and plugin kinds import in the worker as they do here)."""
    env = dict(os.environ)
    env.update(dict.fromkeys(_ONE_THREAD, "1"))
    paths = [os.path.abspath(p or os.curdir) for p in sys.path if isinstance(p, str)]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


class WorkerProcess:
    """One worker process, serving one job at a time for the thread that holds it."""

    def __init__(self) -> None:
        if not sys.executable:  # an embedding interpreter that cannot say where Python is
            raise OSError("sys.executable is empty: no Python to start")
        self.proc = subprocess.Popen(
            # -P: not the working directory first on its sys.path, where a stray argus_eval folder (an old
            # checkout) would be imported instead of the caller's; PYTHONPATH carries the caller's sys.path
            [sys.executable, "-P", "-m", "argus_eval.perturb.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,  # kept for a death's message, not shown on a normal run
            env=worker_env(),
        )
        for pipe in (self.proc.stdin, self.proc.stdout):
            _widen(pipe)
        self.ready = False
        self._jobs = cast(IO[bytes], self.proc.stdin)
        self._replies = cast(io.BufferedReader, self.proc.stdout)  # bufsize -1: a BufferedReader
        self._stderr: deque[str] = deque(maxlen=20)
        self._drain = threading.Thread(target=self._read_stderr, name="argus-corruptions-stderr", daemon=True)
        self._drain.start()

    def _read_stderr(self) -> None:
        """Keep the last lines it writes to stderr (for a death's message) until it exits."""
        assert self.proc.stderr is not None
        with suppress(OSError, ValueError), self.proc.stderr:
            for line in self.proc.stderr:
                self._stderr.append(line.decode("utf-8", "replace").rstrip()[:300])

    def call(self, job: Frame) -> tuple[str, Any]:
        """The worker's reply to job; WorkerLost when it dies before replying (WorkerNotStarted before it
        was ready)."""
        try:
            write_frame(self._jobs, job)
            if not self.ready:
                read_hello(self._replies)
                self.ready = True
            data, buffers = read_frame(self._replies)
        except (OSError, EOFError, ValueError) as e:  # a broken pipe, the end of its stdout
            raise (WorkerLost if self.ready else WorkerNotStarted)(str(e)) from None
        try:
            reply: tuple[str, Any] = decode(data, buffers)
        except Exception as e:  # the kind's image is of a type the parent cannot load
            return "local", f"its image cannot be loaded here ({type(e).__name__}: {e})"
        return reply

    def ended(self) -> str:
        """How the process ended (reaped here), with the last line it wrote to stderr."""
        self.reap()
        self._drain.join(timeout=1.0)
        code = self.proc.returncode
        how = f"was killed by {_signal_name(-code)}" if code < 0 else f"exited with status {code}"
        last = next((line for line in reversed(self._stderr) if line.strip()), "")
        return f"{how}; its last words: {last}" if last else how

    def close_input(self) -> None:
        """Close its stdin: it finishes the job it holds, if any, and exits."""
        assert self.proc.stdin is not None
        with suppress(OSError, ValueError):  # already gone
            self.proc.stdin.close()

    def kill(self) -> None:
        """SIGKILL it now (a thread waiting for its reply sees it gone)."""
        with suppress(OSError):
            self.proc.kill()

    def reap(self) -> None:
        """Close its stdin, wait for it to exit (_STOP_WAIT_S, then kill it), and close the pipes."""
        self.close_input()
        try:
            self.proc.wait(timeout=_STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            with suppress(OSError, ValueError):
                if pipe is not None:
                    pipe.close()


def _widen(pipe: IO[bytes] | None) -> None:
    """Linux: the pipe holds _PIPE_BYTES instead of 64 KiB, so that a 640x480 image crosses it in one write
    and one read instead of 15 of each (a blank condition's round trip: 3.7 ms -> 0.9 ms)."""
    if sys.platform == "linux" and pipe is not None:
        import fcntl

        with suppress(OSError):  # over /proc/sys/fs/pipe-max-size, or the user's pipe pages: as it is
            fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"

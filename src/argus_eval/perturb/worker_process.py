"""The parent's handle of one corruption worker process (perturb/worker.py is the other end).

Started as `python -m argus_eval.perturb.worker JOBS REPLIES`, never through multiprocessing: a spawned
process imports the caller's __main__, and a user's script without an `if __name__ == "__main__"` guard
would start the run again in every worker. JOBS and REPLIES are two pipes passed as file descriptors, so
that nothing written to its stdout (a site hook as Python starts, a kind's print) can land in a frame;
its stdout and stderr are one pipe kept for a death's message. Its environment limits every numeric
library to one thread (the workers are the parallelism) and carries the caller's sys.path, so that
argus_eval, the caller's modules and plugin kinds import there as they do here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import weakref
from collections import deque
from contextlib import suppress
from typing import IO, Any

from argus_eval.perturb.worker import Frame, FrameTooLong, decode, read_frame, read_hello, write_frame

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
# The most a reply may take: a floor for a small image's, plus a multiple of its job's bytes, which covers
# an image of twice the side in float64 (32x). A header claiming more is not a reply but a worker out of
# step (something in it wrote into the reply pipe): reading it would allocate what it claims.
_REPLY_FLOOR = 64 * 2**20
_REPLY_PER_JOB_BYTE = 32


class WorkerLost(Exception):
    """A worker died, or was stopped for a reply it could not have meant, while it held a job (internal:
    the job is retried alone)."""


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
        if os.name != "posix":  # subprocess passes file descriptors (pass_fds) on POSIX only
            raise OSError(f"a worker's pipes are passed as file descriptors, which {os.name!r} cannot do")
        jobs, to_jobs = _pipe()  # not inheritable: no other child (another worker) holds them open
        try:
            from_replies, replies = _pipe()
        except OSError:  # out of file descriptors
            os.close(jobs)
            os.close(to_jobs)
            raise
        try:
            self.proc = subprocess.Popen(
                # -P: not the working directory first on its sys.path, where a stray argus_eval folder (an
                # old checkout) would be imported instead of the caller's; PYTHONPATH carries sys.path
                [sys.executable, "-P", "-m", "argus_eval.perturb.worker", str(jobs), str(replies)],
                pass_fds=(jobs, replies),
                stdin=subprocess.DEVNULL,  # a kind that reads stdin reads nothing
                stdout=subprocess.PIPE,  # with stderr: kept for a death's message, not shown on a normal run
                stderr=subprocess.STDOUT,
                env=worker_env(),
            )
        except BaseException:
            os.close(to_jobs)
            os.close(from_replies)
            raise
        finally:  # the worker's ends: its own now (an end left open here would hide its death)
            os.close(jobs)
            os.close(replies)
        for fd in (to_jobs, from_replies):
            _widen(fd)
        self.ready = False
        self.broken = ""  # why it was stopped alive: a reply it could not have meant
        # held for the worker's life: close_input and reap close them, and so does a handle dropped
        # unclosed (a make_pool pool never closed): the worker then exits at the end of its job pipe
        self._jobs = open(to_jobs, "wb")  # noqa: SIM115
        self._replies = open(from_replies, "rb")  # noqa: SIM115
        weakref.finalize(self, _close_all, self._jobs, self._replies)
        self._said: deque[str] = deque(maxlen=20)
        # its target holds no reference to this handle, which would keep a dropped one (and its worker) alive
        self._drain = threading.Thread(
            target=_read_output, args=(self.proc, self._said), name="argus-corruptions-output", daemon=True
        )
        self._drain.start()

    def call(self, job: Frame) -> tuple[str, Any]:
        """The worker's reply to job; WorkerLost when it dies before replying, or its reply's header claims
        more than a reply to job may take (it is stopped then); WorkerNotStarted before it was ready."""
        try:
            write_frame(self._jobs, job)
            if not self.ready:
                read_hello(self._replies)
                self.ready = True
            data, buffers = read_frame(self._replies, reply_limit(job))
        except FrameTooLong as e:
            if not self.ready:
                raise WorkerNotStarted(str(e)) from None
            self.broken = (
                f"sent {e} for a reply to its job and was stopped: something in it wrote into its pipe"
            )
            self.kill()  # out of step with its pipe: whatever it writes next is no reply
            raise WorkerLost(self.broken) from None
        except (OSError, EOFError, ValueError) as e:  # a broken pipe, the end of its reply pipe
            raise (WorkerLost if self.ready else WorkerNotStarted)(str(e)) from None
        try:
            reply: tuple[str, Any] = decode(data, buffers)
        except Exception as e:  # the kind's image is of a type the parent cannot load
            return "local", f"its image cannot be loaded here ({type(e).__name__}: {e})"
        return reply

    def ended(self) -> str:
        """How the process ended (reaped here), with the last line it wrote to stdout or stderr; why it
        was stopped when it was (self.broken)."""
        self.reap()
        if self.broken:
            return self.broken
        self._drain.join(timeout=1.0)
        code = self.proc.returncode
        how = f"was killed by {_signal_name(-code)}" if code < 0 else f"exited with status {code}"
        last = next((line for line in reversed(self._said) if line.strip()), "")
        return f"{how}; its last words: {last}" if last else how

    def close_input(self) -> None:
        """Close its job pipe: it finishes the job it holds, if any, and exits."""
        with suppress(OSError, ValueError):  # already gone
            self._jobs.close()

    def kill(self) -> None:
        """SIGKILL it now (a thread waiting for its reply sees it gone)."""
        with suppress(OSError):
            self.proc.kill()

    def reap(self) -> None:
        """Close its job pipe, wait for it to exit (_STOP_WAIT_S, then kill it), and close its reply pipe."""
        self.close_input()
        try:
            self.proc.wait(timeout=_STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            self.proc.wait()
        with suppress(OSError, ValueError):
            self._replies.close()


def _read_output(proc: subprocess.Popen[bytes], said: deque[str]) -> None:
    """Keep the last lines a worker writes to stdout or stderr (for a death's message) until it exits, then
    reap it: one whose handle was dropped unclosed leaves no zombie behind."""
    assert proc.stdout is not None
    with suppress(OSError, ValueError), proc.stdout:
        for line in proc.stdout:
            said.append(line.decode("utf-8", "replace").rstrip()[:300])
    with suppress(OSError):
        proc.wait()


def _close_all(*files: IO[bytes]) -> None:
    for file in files:
        with suppress(OSError, ValueError):  # already closed, or its worker gone
            file.close()


def _pipe() -> tuple[int, int]:
    """os.pipe(), both ends numbered above 2. A process started with its stdin or stdout closed (`<&-`, a
    daemon) gets 0 or 1 from os.pipe, and an end passed to the worker as 0 or 1 would be replaced there by
    its own stdin (/dev/null) or stdout: it would read no job, or write its hello where no one reads it,
    and every run would fall back to threads."""
    ends = list(os.pipe())
    try:
        for i, fd in enumerate(ends):
            if fd <= 2:
                import fcntl

                ends[i] = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)  # not inheritable, as os.pipe's
                os.close(fd)
    except OSError:
        for fd in ends:
            with suppress(OSError):
                os.close(fd)
        raise
    return ends[0], ends[1]


def reply_limit(job: Frame) -> int:
    """The most bytes a reply to job may take (its header is checked against it before it is read)."""
    return _REPLY_FLOOR + _REPLY_PER_JOB_BYTE * sum(memoryview(part).nbytes for part in job)


def _widen(fd: int) -> None:
    """Linux: the pipe holds _PIPE_BYTES instead of 64 KiB, so that a 640x480 image crosses it in one write
    and one read instead of 15 of each (a blank condition's round trip: 3.7 ms -> 0.9 ms)."""
    if sys.platform == "linux":
        import fcntl

        with suppress(OSError):  # over /proc/sys/fs/pipe-max-size, or the user's pipe pages: as it is
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"

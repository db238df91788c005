"""Threads that fit the machine: the cores this process may use, and torch's threads sized from them.

A container or a task set often lets a process use fewer cores than the host has (os.cpu_count()
names the host's): the CPU affinity mask and the cgroup CPU quota (v2 cpu.max, v1 cfs quota) say what
it may use. torch's intra-op threads are set to that, its inter-op threads to 1 (the run issues one
op at a time), so nothing is oversubscribed. The OpenMP wait policy is set to passive (idle workers
sleep instead of spinning): on a busy machine a spinning worker takes the core another thread of the
run needs, and CPU time multiplies while nothing is done.

No heavy import at module level: the CLI calls `quiet_openmp` before torch loads its OpenMP runtime,
which reads the variables once, when it starts.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

# libgomp (torch's Linux wheels) and Intel's libiomp read these when they load: passive waiting, and
# no spin time after a parallel region.
WAIT_POLICY = {"OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0"}

CGROUP_ROOT = Path("/sys/fs/cgroup")


def quiet_openmp() -> dict[str, str]:
    """Put the passive wait policy in the environment (a value the user exported is kept); the policy
    in force. Takes effect only if called before torch (or numpy's OpenMP BLAS) is first imported."""
    for key, value in WAIT_POLICY.items():
        os.environ.setdefault(key, value)
    return {key: os.environ[key] for key in WAIT_POLICY}


@dataclass(frozen=True)
class Cores:
    """How many cores this process may use, and what limited it (affinity or a cgroup quota)."""

    count: int
    source: str
    affinity: int
    quota: float | None = None  # the cgroup quota in cores, None when there is none


def _own_cgroup(root: Path, proc_cgroup: Path) -> tuple[Path | None, Path | None]:
    """(the v2 cgroup folder, the v1 cpu controller folder) of this process, where they exist."""
    v2: Path | None = None
    v1: Path | None = None
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return None, None
    for line in lines:
        hid, _, rest = line.partition(":")
        controllers, _, rel = rest.partition(":")
        rel = rel.lstrip("/")
        if hid == "0" and controllers == "":
            v2 = root / rel if (root / "cpu.max").exists() or (root / rel / "cpu.max").exists() else None
        elif "cpu" in controllers.split(","):
            for name in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
                if (root / name).is_dir():
                    v1 = root / name / rel
                    break
    return v2, v1


def _v2_quota(folder: Path, root: Path) -> float | None:
    # the tightest cpu.max from this cgroup up to the root: a parent's limit binds its children
    best: float | None = None
    here = folder
    while True:
        try:
            parts = (here / "cpu.max").read_text().split()
            quota, period = parts[0], parts[1] if len(parts) > 1 else "100000"
            if quota != "max" and float(period) > 0:
                cores = float(quota) / float(period)
                best = cores if best is None else min(best, cores)
        except (OSError, ValueError, IndexError):
            pass
        if here == root or root not in here.parents:
            return best
        here = here.parent


def _v1_quota(folder: Path) -> float | None:
    best: float | None = None
    here = folder
    for _ in range(64):  # up to the controller's root
        try:
            quota = float((here / "cpu.cfs_quota_us").read_text().strip())
            period = float((here / "cpu.cfs_period_us").read_text().strip())
            if quota > 0 and period > 0:
                best = quota / period if best is None else min(best, quota / period)
        except (OSError, ValueError):
            pass
        if here.parent == here or not (here.parent / "cpu.cfs_period_us").exists():
            return best
        here = here.parent
    return best


def cgroup_quota(
    root: Path = CGROUP_ROOT, proc_cgroup: Path = Path("/proc/self/cgroup")
) -> tuple[float, str] | None:
    """The cgroup CPU quota in cores and which interface gave it (v2 cpu.max, v1 cfs quota); None when
    no quota is set or no cgroup file can be read."""
    v2, v1 = _own_cgroup(root, proc_cgroup)
    if v2 is not None:
        q = _v2_quota(v2, root)
        if q is not None:
            return q, "cgroup v2 cpu.max"
    if v1 is not None:
        q = _v1_quota(v1)
        if q is not None:
            return q, "cgroup v1 cpu.cfs_quota_us"
    return None


def available_cores(root: Path = CGROUP_ROOT, proc_cgroup: Path = Path("/proc/self/cgroup")) -> Cores:
    """The cores this process may use: its affinity mask, lowered to the cgroup quota (rounded up: a
    quota of 1.5 cores keeps 2 threads busy at three quarters each), at least 1."""
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no sched_getaffinity (macOS): the host's count is all we know
        affinity = os.cpu_count() or 1
    found = cgroup_quota(root, proc_cgroup)
    if found is not None and math.ceil(found[0]) < affinity:
        return Cores(max(1, math.ceil(found[0])), found[1], affinity, round(found[0], 3))
    return Cores(
        max(1, affinity), "sched_getaffinity", affinity, None if found is None else round(found[0], 3)
    )


# Input workers by default: decoding and corrupting release the GIL, so each core can take one, but past
# 8 the model's own thread, not the inputs, sets the pace of a batch of 32.
MAX_INPUT_WORKERS = 8


@dataclass(frozen=True)
class ThreadPlan:
    """torch's threads for a run, from the cores found and the config's requests."""

    cores: Cores
    intra_op: int
    inter_op: int
    requested: int | None
    timing: int | None  # torch threads while timing (efficiency.cpu_threads, clipped); None: intra_op
    notes: tuple[str, ...] = ()  # the requests that were clipped, and to what
    workers: int = 1  # threads preparing the next batches' inputs (runner/execute/local.py)
    processes: int = 0  # worker processes computing corruptions for them (0: in the threads)

    def to_json(self) -> dict[str, object]:
        """The manifest's record: cores found and from where, threads chosen, the OpenMP wait policy."""
        return {
            "cores_available": self.cores.count,
            "cores_source": self.cores.source,
            "affinity_cores": self.cores.affinity,
            "cgroup_quota_cores": self.cores.quota,
            "threads_requested": self.requested,
            "intra_op_threads": self.intra_op,
            "inter_op_threads": self.inter_op,
            "timing_threads": self.timing,
            "input_workers": self.workers,
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "kmp_blocktime": os.environ.get("KMP_BLOCKTIME"),
        }


def fit(requested: int | None, cores: Cores, key: str, workers: int = 1) -> tuple[int, str | None]:
    """Threads per worker for `workers` workers on `cores`: the request (or every core), clipped so
    that workers x threads never exceeds the cores; the note (naming the config key) says when a
    request was clipped."""
    share = max(1, cores.count // max(1, workers))
    if requested is None:
        return share, None
    if requested <= share:
        return requested, None
    return share, (
        f"{key}: {requested} thread(s) asked but {cores.count} core(s) are available ({cores.source})"
        + (f" for {workers} workers" if workers > 1 else "")
        + f"; clipped to {share}"
    )


def plan_threads(
    requested: int | None,
    timing: int | None = None,
    cores: Cores | None = None,
    workers: int | None = None,
    processes: bool = True,
) -> ThreadPlan:
    """The run's torch threads: `requested` (the config's threads) and `timing` (efficiency.cpu_threads)
    clipped to the available cores, and its input workers (`workers`, or one per core up to
    MAX_INPUT_WORKERS), with as many corruption processes when `processes` and there are 2 or more
    (one worker gains nothing from a process but the cost of sending it the images)."""
    cores = cores or available_cores()
    intra, note = fit(requested, cores, "threads")
    timed, timing_note = (None, None) if timing is None else fit(timing, cores, "efficiency.cpu_threads")
    if workers is None:
        inputs, workers_note = min(cores.count, MAX_INPUT_WORKERS), None
    else:
        inputs, workers_note = fit(workers, cores, "workers")
    notes = tuple(n for n in (note, timing_note, workers_note) if n is not None)
    procs = inputs if processes and inputs >= 2 else 0
    return ThreadPlan(cores, intra, 1, requested, timed, notes, inputs, procs)


class TorchThreads:
    """torch's threads set to a plan once torch is loaded, and restored after: a run that loads no local
    model (served models only) never imports torch for this."""

    def __init__(self, plan: ThreadPlan) -> None:
        self.plan = plan
        self._before: int | None = None

    def ensure(self) -> None:
        """Apply the plan if torch is loaded and it was not applied yet (the model pool calls this after
        each load). Inter-op threads are set where torch still allows it (before its first inter-op
        work: a later call keeps them)."""
        if self._before is not None or "torch" not in sys.modules:
            return
        import torch

        self._before = torch.get_num_threads()
        torch.set_num_threads(self.plan.intra_op)
        if torch.get_num_interop_threads() != self.plan.inter_op:
            with suppress(RuntimeError):  # the inter-op pool already started in this process
                torch.set_num_interop_threads(self.plan.inter_op)

    def restore(self) -> None:
        """torch's intra-op threads as they were before the plan was applied."""
        if self._before is not None:
            import torch

            torch.set_num_threads(self._before)
            self._before = None


@contextmanager
def using(plan: ThreadPlan) -> Iterator[TorchThreads]:
    """torch's threads set to the plan inside (restored after): now if torch is loaded, else when the
    yielded TorchThreads' ensure() finds it loaded; the BLAS pools of numpy and scipy to the same."""
    from threadpoolctl import threadpool_limits

    threads = TorchThreads(plan)
    threads.ensure()
    try:
        # numpy's BLAS pool (OpenBLAS) too: OMP_WAIT_POLICY calms torch's, not it, and on a busy
        # machine its spinning threads made a tiny matmul 20-40x slower than with the run's share
        with threadpool_limits(limits=plan.intra_op, user_api="blas"):
            yield threads
    finally:
        threads.restore()

"""A run's corruptions in worker processes (perturb/processes.py CorruptionProcesses, perturb/worker.py):
equal bit for bit to the serial path from several threads at once, a kind's own error raised in the
caller, a kind that cannot travel applied in the calling thread, a worker killed mid-job failing only
its sample, a script without a main guard, and no process left behind by close() or a dead parent."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import psutil
import pytest

from argus_eval.data.images import ImageArray
from argus_eval.errors import PerturbationError
from argus_eval.perturb import worker_process
from argus_eval.perturb.conditions import Condition
from argus_eval.perturb.image import IMAGENET_C_NAMES
from argus_eval.perturb.kinds import CONDITION_KINDS, ConditionKind, register_kind
from argus_eval.perturb.processes import CorruptionProcesses, CorruptionWorkerWarning

IMAGE = np.random.default_rng(0).integers(0, 256, (48, 64, 3), dtype=np.uint8)
# every image corruption but glass_blur (numba compiles it for seconds in each fresh worker)
CORRUPTIONS = [f"image:{n}@{1 + i % 5}" for i, n in enumerate(IMAGENET_C_NAMES) if n != "glass_blur"]
CONDITIONS = [*CORRUPTIONS, "image:resize@3", "image:aspect@4", "control:blank@1"]
SEEDS = [0, 1, 12345, 2**32 - 1]


class RaisingKind(ConditionKind):
    """Kind "raising": "argus" raises a PerturbationError (an image it cannot perturb), "bug" a ValueError,
    "probe" a PerturbationError saying where it ran (pid, thread settings, BLAS threads) as JSON."""

    kind = "raising"
    role = "perturbation"
    changes: ClassVar[frozenset[str]] = frozenset({"image"})
    shows_perturbed_image = True

    def names(self) -> list[str]:
        return ["argus", "bug", "probe"]

    def apply_image(self, condition: Any, image: ImageArray, seed: int) -> ImageArray:
        if condition.name == "probe":
            from threadpoolctl import threadpool_info

            names = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
            env = {k: os.environ.get(k) for k in names}
            blas = sorted({p["num_threads"] for p in threadpool_info()})
            raise PerturbationError(json.dumps({"pid": os.getpid(), "env": env, "blas": blas}))
        if condition.name == "argus":
            raise PerturbationError(f"raising:argus cannot perturb {image.shape[0]} rows (seed {seed})")
        raise ValueError(f"a bug at seed {seed}")


class DyingKind(ConditionKind):
    """Kind "dying": while the file `marker` exists, it kills the worker applying it ("once": the first
    one only, by removing the marker first); else it inverts the image. The marker holds the test
    process's pid, which it never kills."""

    kind = "dying"
    role = "perturbation"
    changes: ClassVar[frozenset[str]] = frozenset({"image"})
    shows_perturbed_image = True

    def __init__(self) -> None:
        self.marker = ""  # set by the test; travels with the pickled instance

    def names(self) -> list[str]:
        return ["once", "always"]

    def apply_image(self, condition: Any, image: ImageArray, seed: int) -> ImageArray:
        marker = Path(self.marker)
        if marker.exists() and int(marker.read_text()) != os.getpid():
            if condition.name == "once":
                marker.unlink()
            os.kill(os.getpid(), signal.SIGKILL)
        return 255 - image


@pytest.fixture(scope="module")
def procs() -> Iterator[CorruptionProcesses]:
    """Two workers shared by the tests that only read pixels (each fresh worker costs about a second)."""
    p = CorruptionProcesses(2)
    yield p
    p.close()


@pytest.fixture(scope="module")
def test_kinds() -> Iterator[dict[str, ConditionKind]]:
    kinds = {"raising": register_kind(RaisingKind), "dying": register_kind(DyingKind)}
    yield kinds
    for name in kinds:
        CONDITION_KINDS.unregister(name)


Case = tuple[Condition, int]  # a condition and its seed
Outcome = tuple[int, "np.ndarray | Exception"]  # the calling thread's ident, the image or what it raised


def _in_threads(p: CorruptionProcesses, cases: Sequence[Case], threads: int) -> list[Outcome]:
    """p.apply(condition, IMAGE, seed) for each case, `threads` threads at once, in the order of cases."""
    out: list[Outcome] = [(0, ValueError("not run"))] * len(cases)

    def run(start: int) -> None:
        for i in range(start, len(cases), threads):
            try:
                out[i] = threading.get_ident(), p.apply(cases[i][0], IMAGE, cases[i][1])
            except Exception as e:
                out[i] = threading.get_ident(), e

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return out


def _equal_serial(cases: Sequence[Case], got: list[Outcome]) -> bool:
    """Whether every outcome is the image the serial path makes, of its dtype."""
    for (cond, seed), (_, out) in zip(cases, got, strict=True):
        expected = cond.apply_image(IMAGE, seed)
        if not isinstance(out, np.ndarray) or out.dtype != expected.dtype:
            return False
        if not np.array_equal(out, expected):
            return False
    return True


def _children() -> set[int]:
    return {c.pid for c in psutil.Process().children(recursive=True)}


def test_pixels_equal_the_serial_path_from_threads_at_once(procs: CorruptionProcesses) -> None:
    cases = [(Condition.parse(c), s) for c in CONDITIONS for s in SEEDS]
    got = _in_threads(procs, cases, threads=4)
    for (cond, seed), (_, out) in zip(cases, got, strict=True):
        assert isinstance(out, np.ndarray), (cond.id, seed, out)
        assert _equal_serial([(cond, seed)], [(0, out)]), (cond.id, seed)
    # a condition that leaves the pixels as they are gives back the very image it was given
    assert procs.apply(Condition.parse("text:typos@2"), IMAGE, 3) is IMAGE
    counts = procs.to_json()
    assert counts["workers_started"] == 2 and counts["worker_deaths"] == 0
    assert counts["applied_in_thread"] == 0


def test_a_kind_s_own_error_is_raised_in_the_caller_as_the_serial_path_raises_it(
    procs: CorruptionProcesses, test_kinds: dict[str, ConditionKind]
) -> None:
    for name, error in (("argus", PerturbationError), ("bug", ValueError)):
        cond = Condition("raising", name, 2)
        with pytest.raises(error) as serial:
            cond.apply_image(IMAGE, 7)
        with pytest.raises(error) as worker:
            procs.apply(cond, IMAGE, 7)
        assert type(worker.value) is type(serial.value) and str(worker.value) == str(serial.value)
    # a kind's bug carries where in the worker it was raised
    assert "in a corruption worker process" in str(worker.value.__cause__)
    assert "a bug at seed 7" in str(worker.value.__cause__)
    # the worker is the parallelism: one BLAS/OpenMP thread, set before numpy loaded
    with pytest.raises(PerturbationError) as probe:
        procs.apply(Condition("raising", "probe", 1), IMAGE, 0)
    there = json.loads(str(probe.value))
    assert there["pid"] != os.getpid() and there["blas"] in ([], [1])
    assert set(there["env"].values()) == {"1"}
    assert procs.to_json()["applied_in_thread"] == 0  # raised there, not computed again here


def test_a_kind_that_cannot_be_pickled_is_applied_in_the_calling_thread(procs: CorruptionProcesses) -> None:
    seen: list[tuple[int, int]] = []

    class LocalKind(ConditionKind):  # made inside a function: pickle cannot name it
        kind = "localkind"
        role = "perturbation"
        changes: ClassVar[frozenset[str]] = frozenset({"image"})
        shows_perturbed_image = True

        def names(self) -> list[str]:
            return ["roll"]

        def apply_image(self, condition: Any, image: ImageArray, seed: int) -> ImageArray:
            seen.append((os.getpid(), threading.get_ident()))
            return np.roll(image, seed % 7, axis=1)

    register_kind(LocalKind)
    try:
        cond = Condition("localkind", "roll", 1)
        before = procs.to_json()["applied_in_thread"]
        got = _in_threads(procs, [(cond, s) for s in SEEDS], threads=2)
        assert {pid for pid, _ in seen} == {os.getpid()}
        assert {t for _, t in seen} == {t for t, _ in got}  # each in the thread that asked
        assert _equal_serial([(cond, s) for s in SEEDS], got)
        assert procs.to_json()["applied_in_thread"] == before + len(SEEDS)
    finally:
        CONDITION_KINDS.unregister("localkind")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="kills a worker with SIGKILL")
def test_a_worker_killed_mid_job_fails_only_its_sample(
    tmp_path: Path, test_kinds: dict[str, ConditionKind]
) -> None:
    marker = tmp_path / "kill-the-worker"
    test_kinds["dying"].marker = str(marker)  # type: ignore[attr-defined]
    noise = Condition.parse("image:gaussian_noise@3")
    p = CorruptionProcesses(2)
    try:
        # killed, and killed again when retried alone: that sample fails; the others beside it do not
        marker.write_text(str(os.getpid()))
        others = [(noise, s) for s in SEEDS]
        (_, died), *got = _in_threads(p, [(Condition("dying", "always", 1), 5), *others], threads=3)
        assert isinstance(died, PerturbationError), died
        assert "dying:always@1" in str(died) and "retried alone" in str(died) and "SIGKILL" in str(died)
        assert _equal_serial(others, got)
        assert {k: p.to_json()[k] for k in ("worker_deaths", "retried_alone")} == {
            "worker_deaths": 2,
            "retried_alone": 1,
        }
        # killed once: the retry alone in a fresh worker gives the right pixels
        marker.write_text(str(os.getpid()))
        assert np.array_equal(p.apply(Condition("dying", "once", 1), IMAGE, 5), 255 - IMAGE)
        assert p.to_json()["worker_deaths"] == 3 and p.to_json()["retried_alone"] == 2
        # later jobs run on the workers that replaced the dead ones, never more than 2 at once
        assert _equal_serial(others, _in_threads(p, others, threads=2))
        assert np.array_equal(p.apply(Condition("dying", "always", 1), IMAGE, 5), 255 - IMAGE)
        assert len(p._live) <= 2 and all(w.proc.poll() is None for w in p._live)
        assert p.to_json()["applied_in_thread"] == 0 and p.to_json()["worker_deaths"] == 3
    finally:
        p.close()


def test_close_stops_every_worker_and_later_corruptions_stay_in_the_thread() -> None:
    before = _children()
    p = CorruptionProcesses(2)
    assert _children() == before  # nothing starts before the first corruption
    noise = Condition.parse("image:gaussian_noise@3")
    _in_threads(p, [(noise, s) for s in SEEDS], threads=2)
    workers = {w.proc.pid for w in p._live}
    assert len(workers) == 2 and workers <= _children()
    p.close()
    assert not workers & _children() and _children() <= before
    assert np.array_equal(p.apply(noise, IMAGE, 9), noise.apply_image(IMAGE, 9))
    assert p.to_json()["workers_started"] == 2 and p.to_json()["applied_in_thread"] == 1
    assert not _children() - before


@pytest.mark.parametrize("python", ["no-such-python", "false"])
def test_when_no_worker_can_start_the_threads_compute_the_corruptions(
    python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a Python that is not there (Popen fails), or a program that ends before it says it is ready
    executable = shutil.which(python) or str(tmp_path / python)
    if python == "false" and not Path(executable).exists():
        pytest.skip("no `false` program")
    monkeypatch.setattr(sys, "executable", executable)
    noise = Condition.parse("image:gaussian_noise@3")
    p = CorruptionProcesses(2)
    try:
        with pytest.warns(CorruptionWorkerWarning, match="could not start"):
            got = _in_threads(p, [(noise, s) for s in SEEDS], threads=2)
        assert _equal_serial([(noise, s) for s in SEEDS], got)
        counts = p.to_json()
        assert counts["start_failures"] >= 1 and counts["workers_started"] <= 2
        assert counts["applied_in_thread"] == len(SEEDS) and counts["worker_deaths"] == 0
    finally:
        p.close()


def test_an_interrupted_job_s_worker_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    noise = Condition.parse("image:gaussian_noise@3")
    p = CorruptionProcesses(1)
    try:
        p.apply(noise, IMAGE, 1)
        (first,) = p._live
        from argus_eval.perturb.worker import read_frame as real  # what worker_process calls

        def interrupted(*args: Any) -> Any:
            raise KeyboardInterrupt

        monkeypatch.setattr(worker_process, "read_frame", interrupted)
        with pytest.raises(KeyboardInterrupt):
            p.apply(noise, IMAGE, 2)
        monkeypatch.setattr(worker_process, "read_frame", real)
        # its reply would have answered the next job: it was killed, and a fresh worker takes its slot
        assert first.proc.returncode is not None
        assert np.array_equal(p.apply(noise, IMAGE, 3), noise.apply_image(IMAGE, 3))
        assert p.to_json()["workers_started"] == 2 and p.to_json()["worker_deaths"] == 0
    finally:
        p.close()


SCRIPT = """
import json, os, threading
import numpy as np
import psutil
from argus_eval.perturb.conditions import Condition
from argus_eval.perturb.kinds import ConditionKind, register_kind
from argus_eval.perturb.processes import CorruptionProcesses, CorruptionWorkerWarning

class FlipKind(ConditionKind):  # in __main__: pickled here, not loadable in a worker
    kind = "flip"
    role = "perturbation"
    changes = frozenset({"image"})
    def names(self):
        return ["lr"]
    def apply_image(self, condition, image, seed):
        return image[:, ::-1].copy()

register_kind(FlipKind)
image = np.random.default_rng(1).integers(0, 256, (40, 56, 3), dtype=np.uint8)
procs = CorruptionProcesses(2)
cases = [(Condition.parse(c), s) for c in ("image:gaussian_noise@3", "image:fog@2", "flip:lr@1")
         for s in (0, 3)]
equal = []
def run(part):
    for cond, seed in part:
        equal.append(bool(np.array_equal(procs.apply(cond, image, seed), cond.apply_image(image, seed))))
threads = [threading.Thread(target=run, args=(cases[i::2],)) for i in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
workers = [c.pid for c in psutil.Process().children()]
print(json.dumps({"equal": equal, "counts": procs.to_json(), "workers": workers}), flush=True)
os._exit(0)  # no close(), no atexit: the workers must end at the end of their stdin
"""


def test_a_script_without_a_main_guard_works_and_its_workers_end_with_it(tmp_path: Path) -> None:
    script = tmp_path / "no_guard.py"
    script.write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "bootstrapping phase" not in done.stderr and done.stderr == "", done.stderr
    said = json.loads(done.stdout)
    assert said["equal"] == [True] * 6
    counts = said["counts"]
    assert counts["workers_started"] == 2 and counts["worker_deaths"] == 0
    assert counts["applied_in_thread"] == 2  # the __main__ kind, once per seed
    assert len(said["workers"]) == 2
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_running(pid) for pid in said["workers"]):
        time.sleep(0.1)
    assert not any(_running(pid) for pid in said["workers"])


def _running(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False

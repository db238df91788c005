"""Hostile cases of the corruption worker processes (perturb/processes.py, perturb/worker.py): image
corruptions registered at run time (in the caller only, or replacing a built-in), exceptions that cannot
travel, sys.exit in a kind, a write into a read-only image, a huge image, a kind that prints, a worker
that dies mid-reply, close() while a job is in flight and twice, odd return values, many threads at once,
and a stray `argus_eval` in the working directory."""

from __future__ import annotations

import gc
import io
import json
import os
import signal
import struct
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import psutil
import pytest

from argus_eval.data.images import ImageArray
from argus_eval.errors import PerturbationError
from argus_eval.perturb.conditions import Condition
from argus_eval.perturb.image import IMAGE_PERTURBATIONS, ImagePerturbation
from argus_eval.perturb.kinds import CONDITION_KINDS, ConditionKind, register_kind
from argus_eval.perturb.processes import CorruptionProcesses, CorruptionWorkerWarning

IMAGE = np.random.default_rng(3).integers(0, 256, (40, 52, 3), dtype=np.uint8)
NOISE = Condition.parse("image:gaussian_noise@3")


def _in_worker() -> bool:
    """Whether this runs in a corruption worker (its __main__ is perturb/worker.py), not in the tests."""
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    return getattr(spec, "name", "") == "argus_eval.perturb.worker"


def _invert(image: ImageArray, severity: int, seed: int) -> ImageArray:
    """An image corruption at module level (importable in a worker), registered only at run time."""
    return (255 - image).astype(np.uint8)


NAMES = (
    "invert",
    "print",
    "partial",
    "slow",
    "float",
    "shape",
    "fortran",
    "list",
    "localexc",
    "badargs",
    "inplace",
    "exit",
)


class HostileKind(ConditionKind):
    """Kind "hostile", one name per attack; each behaves the same in the tests' thread, except that
    "partial" and "slow" only misbehave in a worker."""

    kind = "hostile"
    role = "perturbation"
    changes: ClassVar[frozenset[str]] = frozenset({"image"})
    shows_perturbed_image = True

    def __init__(self) -> None:
        self.started = ""  # "slow" touches this file when it starts in a worker (set by the test)

    def names(self) -> list[str]:
        return list(NAMES)

    def apply_image(self, condition: Any, image: ImageArray, seed: int) -> Any:
        name = condition.name
        if name == "print":  # garbage on stdout, through Python and straight to fd 1
            print("not a frame " * 5000, flush=True)
            os.write(1, b"\x00garbage" * 4096)
        elif name == "partial" and _in_worker():
            _die_mid_reply()
        elif name == "slow" and _in_worker():
            Path(self.started).write_text("started")
            time.sleep(60)
        elif name == "float":
            return image / 2.0
        elif name == "shape":
            return image[::2, ::3]  # a strided view of another shape
        elif name == "fortran":
            return np.asfortranarray(255 - image)
        elif name == "list":
            return image[:2, :2].tolist()
        elif name == "localexc":

            class LocalError(Exception):  # defined in a function: its pickle cannot name it
                pass

            raise LocalError(f"local at seed {seed}")
        elif name == "inplace":  # against the contract: modifies the image it was given
            image[0, 0] = 0
            return image
        elif name == "exit":
            sys.exit(3)
        elif name == "badargs":
            raise ValueError(f"bad args at seed {seed}", threading.Lock())  # a lock does not pickle
        return 255 - image


def _die_mid_reply() -> None:
    """Write the start of a reply frame (its header promises more) to the parent, then die: the parent
    reads a partial message."""
    replies = [
        o
        for o in gc.get_objects()
        if isinstance(o, io.BufferedWriter) and not o.closed and o.fileno() not in (1, 2) and "w" in o.mode
    ]
    for stream in replies:
        stream.write(struct.pack("<QI", 1000, 0) + b"0123456789")
        stream.flush()
    os.kill(os.getpid(), signal.SIGKILL)


@pytest.fixture(scope="module")
def hostile() -> Iterator[ConditionKind]:
    kind = register_kind(HostileKind)
    yield kind
    CONDITION_KINDS.unregister("hostile")


@pytest.fixture()
def runtime_invert() -> Iterator[Condition]:
    """image:hostile_invert, registered at run time here (not by any import a worker does)."""
    IMAGE_PERTURBATIONS.register("hostile_invert", ImagePerturbation(_invert, "custom", stochastic=False))
    try:
        yield Condition.parse("image:hostile_invert@2")
    finally:
        IMAGE_PERTURBATIONS.unregister("hostile_invert")


def _outcome(cond: Condition, image: np.ndarray, seed: int, p: CorruptionProcesses | None) -> Any:
    """What applying cond gives, in the calling thread (p None) or through p: the result or the exception."""
    try:
        return p.apply(cond, image, seed) if p is not None else cond.apply_image(image, seed)
    except Exception as e:
        return e


def _same(got: Any, expected: Any) -> bool:
    """Whether got is what the serial path gave: an equal array of the same dtype, an equal list, or an
    exception of the same type and message."""
    if isinstance(expected, BaseException):  # args[0]: a second argument may be a lock (its repr differs)
        return type(got).__qualname__ == type(expected).__qualname__ and got.args[:1] == expected.args[:1]
    if isinstance(expected, np.ndarray):
        return (
            isinstance(got, np.ndarray)
            and got.dtype == expected.dtype
            and got.shape == expected.shape
            and np.array_equal(got, expected)
        )
    return bool(got == expected)


def _children() -> set[int]:
    return {c.pid for c in psutil.Process().children(recursive=True)}


def test_an_image_corruption_registered_at_run_time_is_applied_in_the_calling_thread(
    runtime_invert: Condition,
) -> None:
    p = CorruptionProcesses(2)
    try:
        cases = [(c, s) for c in (NOISE, runtime_invert) for s in (0, 1, 2, 3)]
        out: list[Any] = [None] * len(cases)

        def run(start: int) -> None:
            for i in range(start, len(cases), 2):
                out[i] = _outcome(cases[i][0], IMAGE, cases[i][1], p)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            threads = [threading.Thread(target=run, args=(t,)) for t in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        assert not caught, [str(w.message) for w in caught]
        for (cond, seed), got in zip(cases, out, strict=True):
            assert _same(got, _outcome(cond, IMAGE, seed, None)), (cond.id, seed, got)
        counts = p.to_json()
        # the run-time corruption stayed here (once per seed); the built-in one went on in the workers
        assert counts["applied_in_thread"] == 4 and counts["workers_started"] >= 1
        assert counts["worker_deaths"] == 0
        before = counts["applied_in_thread"]
        assert _same(p.apply(NOISE, IMAGE, 9), NOISE.apply_image(IMAGE, 9))
        assert p.to_json()["applied_in_thread"] == before
    finally:
        p.close()


def test_a_built_in_corruption_replaced_at_run_time_gives_the_replacement_s_pixels() -> None:
    resize = IMAGE_PERTURBATIONS.get("resize")
    IMAGE_PERTURBATIONS.unregister("resize")
    IMAGE_PERTURBATIONS.register("resize", ImagePerturbation(_invert, "geometry", stochastic=False))
    p = CorruptionProcesses(1)
    try:
        cond = Condition.parse("image:resize@2")
        assert _same(p.apply(cond, IMAGE, 1), cond.apply_image(IMAGE, 1))
        assert p.to_json()["applied_in_thread"] == 1
    finally:
        p.close()
        IMAGE_PERTURBATIONS.unregister("resize")
        IMAGE_PERTURBATIONS.register("resize", resize)


@pytest.mark.parametrize("name", ["localexc", "badargs", "float", "shape", "fortran", "list", "print"])
def test_what_a_kind_raises_or_returns_is_what_the_serial_path_gives(
    name: str, hostile: ConditionKind, procs: CorruptionProcesses
) -> None:
    cond = Condition("hostile", name, 1)
    expected = _outcome(cond, IMAGE, 4, None)
    got = _outcome(cond, IMAGE, 4, procs)
    assert _same(got, expected), (got, expected)
    # the worker still answers the next job with its own reply (nothing printed got into the protocol)
    assert _same(procs.apply(NOISE, IMAGE, 5), NOISE.apply_image(IMAGE, 5))
    assert procs.to_json()["worker_deaths"] == 0


@pytest.fixture(scope="module")
def procs() -> Iterator[CorruptionProcesses]:
    p = CorruptionProcesses(1)
    yield p
    p.close()


def test_a_kind_that_writes_into_a_read_only_image_fails_there_as_in_the_thread(
    hostile: ConditionKind, procs: CorruptionProcesses
) -> None:
    # the image cache hands out read-only images: writing into one must fail in a worker as it does here
    cond = Condition("hostile", "inplace", 1)
    shared = IMAGE.copy()
    shared.setflags(write=False)
    expected = _outcome(cond, shared, 0, None)
    assert isinstance(expected, ValueError)
    assert _same(_outcome(cond, shared, 0, procs), expected)
    assert np.array_equal(shared, IMAGE)


def test_a_kind_that_calls_sys_exit_raises_system_exit_in_the_caller_as_in_the_thread(
    hostile: ConditionKind, procs: CorruptionProcesses
) -> None:
    cond = Condition("hostile", "exit", 1)
    with pytest.raises(SystemExit) as serial:
        cond.apply_image(IMAGE, 0)
    with pytest.raises(SystemExit) as worker:
        procs.apply(cond, IMAGE, 0)
    assert worker.value.code == serial.value.code == 3
    assert procs.to_json()["worker_deaths"] == 0  # not a worker's death, retried and failed as one


def test_a_huge_image_crosses_the_pipe_both_ways(hostile: ConditionKind, procs: CorruptionProcesses) -> None:
    huge = np.random.default_rng(5).integers(0, 256, (3000, 4000, 3), dtype=np.uint8)
    cond = Condition("hostile", "invert", 1)
    before = procs.to_json()["applied_in_thread"]
    assert np.array_equal(procs.apply(cond, huge, 0), 255 - huge)
    assert procs.to_json()["applied_in_thread"] == before


def test_many_threads_at_once_each_get_their_own_outcome(
    hostile: ConditionKind, runtime_invert: Condition
) -> None:
    names = ["invert", "localexc", "badargs", "float", "shape", "list"]
    conds = [NOISE, runtime_invert, *(Condition("hostile", n, 1) for n in names)]
    cases = [(c, s) for s in range(3) for c in conds]
    expected = [_outcome(c, IMAGE, s, None) for c, s in cases]
    p = CorruptionProcesses(2)
    try:
        out: list[Any] = [None] * len(cases)

        def run(start: int) -> None:
            for i in range(start, len(cases), 8):
                out[i] = _outcome(cases[i][0], IMAGE, cases[i][1], p)

        threads = [threading.Thread(target=run, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for (cond, seed), got, want in zip(cases, out, expected, strict=True):
            assert _same(got, want), (cond.id, seed, got, want)
        assert len(p._live) <= 2 and p.to_json()["worker_deaths"] == 0
    finally:
        p.close()


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="the worker kills itself with SIGKILL")
def test_a_worker_dying_mid_reply_fails_only_that_sample(hostile: ConditionKind) -> None:
    p = CorruptionProcesses(1)
    try:
        with pytest.raises(PerturbationError) as died:
            p.apply(Condition("hostile", "partial", 1), IMAGE, 0)
        assert "hostile:partial@1" in str(died.value) and "SIGKILL" in str(died.value)
        counts = p.to_json()
        assert counts["worker_deaths"] == 2 and counts["retried_alone"] == 1
        assert _same(p.apply(NOISE, IMAGE, 2), NOISE.apply_image(IMAGE, 2))
    finally:
        p.close()


def test_close_while_a_job_is_in_flight_and_twice(hostile: ConditionKind, tmp_path: Path) -> None:
    before = _children()
    started = tmp_path / "started"
    hostile.started = str(started)  # type: ignore[attr-defined]
    p = CorruptionProcesses(2)
    cond = Condition("hostile", "slow", 1)
    got: list[Any] = []
    thread = threading.Thread(target=lambda: got.append(_outcome(cond, IMAGE, 3, p)))
    thread.start()
    deadline = time.monotonic() + 30
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert started.exists()
    t0 = time.monotonic()
    p.close()
    thread.join(timeout=30)
    assert time.monotonic() - t0 < 10  # killed, not waited for
    assert _same(got[0], 255 - IMAGE)  # the thread computed it itself
    counts = p.to_json()
    assert counts["worker_deaths"] == 0 and counts["applied_in_thread"] == 1
    p.close()  # twice: nothing to do, nothing raised
    assert _same(p.apply(NOISE, IMAGE, 1), NOISE.apply_image(IMAGE, 1))
    assert not _children() - before


def test_a_stray_argus_eval_in_the_working_directory_is_not_what_a_worker_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stray = tmp_path / "argus_eval"
    stray.mkdir()
    (stray / "__init__.py").write_text('raise ImportError("the stray argus_eval was imported")\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    p = CorruptionProcesses(1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", CorruptionWorkerWarning)
            assert _same(p.apply(NOISE, IMAGE, 6), NOISE.apply_image(IMAGE, 6))
        counts = p.to_json()
        assert counts["workers_started"] == 1 and counts["applied_in_thread"] == 0
    finally:
        p.close()


SCRIPT = """
import json
import numpy as np
from argus_eval.perturb.conditions import Condition
from argus_eval.perturb.image import IMAGE_PERTURBATIONS, ImagePerturbation
from argus_eval.perturb.kinds import ConditionKind, register_kind
from argus_eval.perturb.processes import CorruptionProcesses

class MainError(Exception):  # in __main__: a worker cannot load it
    pass

class MainKind(ConditionKind):
    kind = "mainkind"
    role = "perturbation"
    changes = frozenset({"image"})
    def names(self):
        return ["boom"]
    def apply_image(self, condition, image, seed):
        raise MainError(f"boom at seed {seed}")

register_kind(MainKind)
IMAGE_PERTURBATIONS.register("mirror", ImagePerturbation(lambda im, sev, seed: im[:, ::-1], "custom", False))
image = np.random.default_rng(2).integers(0, 256, (40, 56, 3), dtype=np.uint8)
procs = CorruptionProcesses(1)
said = {"equal": [], "raised": []}
for seed in (0, 1, 2):
    for cid in ("image:mirror@1", "image:gaussian_noise@2"):
        cond = Condition.parse(cid)
        got, want = procs.apply(cond, image, seed), cond.apply_image(image, seed)
        said["equal"].append(bool(np.array_equal(got, want)))
    try:
        procs.apply(Condition.parse("mainkind:boom@1"), image, seed)
    except MainError as e:
        said["raised"].append(str(e))
said["counts"] = procs.to_json()
procs.close()
print(json.dumps(said), flush=True)
"""


def test_a_script_s_run_time_corruption_and_its_own_exception_class(tmp_path: Path) -> None:
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr  # no warning, no traceback
    said = json.loads(done.stdout)
    assert said["equal"] == [True] * 6
    assert said["raised"] == [f"boom at seed {s}" for s in (0, 1, 2)]
    counts = said["counts"]
    assert counts["workers_started"] == 1 and counts["worker_deaths"] == 0
    assert counts["applied_in_thread"] == 6  # mirror and mainkind, once per seed each

"""The corruption workers (perturb/processes.py, perturb/worker.py) against what their caller's
environment does: a site hook that prints as Python starts, warnings turned into errors, a kind that
writes a bogus reply header into the reply pipe, a corruption re-registered between two calls, and
corrupt_many (perturb/parallel.py) from a script without a main guard."""

from __future__ import annotations

import gc
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import pytest

from argus_eval.data.images import ImageArray
from argus_eval.errors import PerturbationError
from argus_eval.perturb import processes as processes_module
from argus_eval.perturb.conditions import Condition
from argus_eval.perturb.image import IMAGE_PERTURBATIONS, ImagePerturbation
from argus_eval.perturb.kinds import CONDITION_KINDS, ConditionKind, register_kind
from argus_eval.perturb.processes import CorruptionProcesses, CorruptionWorkerWarning
from argus_eval.perturb.worker import FrameTooLong, decode, encode, meaning, read_frame
from argus_eval.perturb.worker_process import reply_limit

IMAGE = np.random.default_rng(11).integers(0, 256, (36, 44, 3), dtype=np.uint8)
# built-in corruptions of PIL alone: a fresh worker computes them without loading the ImageNet-C library
RESIZE = Condition.parse("image:resize@2")
ASPECT = Condition.parse("image:aspect@4")
SEEDS = (0, 1, 7, 12345)


def _in_worker() -> bool:
    """Whether this runs in a corruption worker (its __main__ is perturb/worker.py), not in the tests."""
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    return getattr(spec, "name", "") == "argus_eval.perturb.worker"


def _reply_streams() -> list[io.BufferedWriter]:
    """In a worker: its open binary writers other than stdout and stderr, the reply pipe among them (what
    a kind can reach however the pipe is passed to it: it runs in the same process)."""
    return [
        o
        for o in gc.get_objects()
        if isinstance(o, io.BufferedWriter) and not o.closed and o.fileno() not in (1, 2) and "w" in o.mode
    ]


class ScribblingKind(ConditionKind):
    """Kind "scribbling": in a worker, "print" prints through Python and straight to fd 1; "size" writes
    a reply header with a huge bogus length into the reply pipe and then returns normally; "once" does as
    "size" while the file `marker` exists, removing it first. Everywhere each returns the inverted image."""

    kind = "scribbling"
    role = "perturbation"
    changes: ClassVar[frozenset[str]] = frozenset({"image"})
    shows_perturbed_image = True

    def __init__(self) -> None:
        self.marker = ""  # set by the test; travels with the pickled instance

    def names(self) -> list[str]:
        return ["print", "size", "once"]

    def apply_image(self, condition: Any, image: ImageArray, seed: int) -> ImageArray:
        name = condition.name
        if _in_worker():
            if name == "print":
                print("a corruption that prints " * 200, flush=True)
                os.write(1, b"\x00straight to fd 1" * 512)
            elif name == "size" or (name == "once" and Path(self.marker).exists()):
                if name == "once":
                    Path(self.marker).unlink()
                for stream in _reply_streams():
                    stream.write(struct.pack("<QI", 2**62, 0))
                    stream.flush()
        return (255 - image).astype(np.uint8)


@pytest.fixture(scope="module")
def scribbling() -> Iterator[ConditionKind]:
    kind = register_kind(ScribblingKind)
    yield kind
    CONDITION_KINDS.unregister("scribbling")


def _in_threads(p: CorruptionProcesses, cases: list[tuple[Condition, int]], threads: int) -> list[Any]:
    """p.apply(condition, IMAGE, seed) for each case from `threads` threads at once: its image or what it
    raised, in the order of cases."""
    out: list[Any] = [None] * len(cases)

    def run(start: int) -> None:
        for i in range(start, len(cases), threads):
            try:
                out[i] = p.apply(cases[i][0], IMAGE, cases[i][1])
            except BaseException as e:  # a warning turned into an error is what this file looks for
                out[i] = e

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return out


SITE_HOOK = """
import os, sys
print("a site hook says hello " * 50)  # left in sys.stdout's buffer, flushed when Python likes
sys.stdout.flush()
os.write(1, b"\\x00and writes straight to fd 1\\n" * 64)
with open(os.environ["ARGUS_TEST_SITE_HOOK_LOG"], "a") as log:
    log.write(f"{os.getpid()}\\n")
"""


def test_a_site_hook_that_prints_at_start_up_does_not_stop_the_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scribbling: ConditionKind
) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(textwrap.dedent(SITE_HOOK), encoding="utf-8")
    log = tmp_path / "hook.log"
    monkeypatch.setenv("ARGUS_TEST_SITE_HOOK_LOG", str(log))
    monkeypatch.syspath_prepend(str(hooks))  # a worker's PYTHONPATH is the caller's sys.path
    printing = Condition("scribbling", "print", 1)
    p = CorruptionProcesses(1)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for seed in SEEDS[:2]:
                assert np.array_equal(p.apply(RESIZE, IMAGE, seed), RESIZE.apply_image(IMAGE, seed))
                # a corruption that prints in the worker does not reach the protocol either
                assert np.array_equal(p.apply(printing, IMAGE, seed), 255 - IMAGE)
        assert not caught, [str(w.message) for w in caught]
        (worker,) = p._live
        # the hook ran in the worker, which started and served every job there
        assert log.read_text().split() == [str(worker.proc.pid)]
        counts = p.to_json()
        assert counts["workers_started"] == 1 and counts["start_failures"] == 0
        assert counts["applied_in_thread"] == 0 and counts["worker_deaths"] == 0
    finally:
        p.close()


@pytest.mark.parametrize("python", ["no-such-python", "false"])
@pytest.mark.parametrize("action", ["error", "always"])
def test_when_warnings_are_errors_the_fallback_to_threads_fails_no_sample(
    python: str,
    action: Literal["error", "always"],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # a Python that is not there (Popen fails), or a program that ends before it says it is ready
    executable = shutil.which(python) or str(tmp_path / python)
    if python == "false" and not Path(executable).exists():
        pytest.skip("no `false` program")
    monkeypatch.setattr(sys, "executable", executable)
    p = CorruptionProcesses(2)
    cases = [(ASPECT, s) for s in SEEDS]
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter(action)  # "error": as -W error or PYTHONWARNINGS=error
            got = _in_threads(p, cases, threads=2)
        for (cond, seed), out in zip(cases, got, strict=True):
            assert isinstance(out, np.ndarray), (seed, out)
            assert np.array_equal(out, cond.apply_image(IMAGE, seed)), seed
        counts = p.to_json()
        assert counts["applied_in_thread"] == len(SEEDS) and counts["start_failures"] >= 1
    finally:
        p.close()
    said = [w for w in caught if issubclass(w.category, CorruptionWorkerWarning)]
    printed = capsys.readouterr().err
    if action == "error":  # not raised into a sample: said once on stderr instead
        assert not said and printed.count("could not start") == 1, printed
        assert "CorruptionWorkerWarning" in printed and "input_processes: false" in printed
    else:
        assert len(said) == 1 and "could not start" in str(said[0].message)
        assert "could not start" not in printed


def test_a_reply_header_with_a_huge_length_is_a_broken_worker(scribbling: ConditionKind) -> None:
    p = CorruptionProcesses(1)
    try:
        with pytest.raises(PerturbationError) as broken:
            p.apply(Condition("scribbling", "size", 1), IMAGE, 0)
        said = str(broken.value)
        assert "scribbling:size@1" in said and "retried alone" in said, said
        assert "broke its reply pipe" in said and "4,611,686,018,427,387,904 bytes" in said, said
        assert "input_processes: false" in said, said
        counts = p.to_json()
        assert counts["worker_deaths"] == 2 and counts["retried_alone"] == 1
        # the next job runs in a fresh worker, with the right pixels
        assert np.array_equal(p.apply(RESIZE, IMAGE, 3), RESIZE.apply_image(IMAGE, 3))
        assert p.to_json()["applied_in_thread"] == 0 and p.to_json()["workers_started"] == 3
    finally:
        p.close()


@pytest.mark.parametrize(("size", "count"), [(2**62, 0), (16, 2**32 - 1), (16, 2), (2**20 + 1, 0)])
def test_a_frame_over_its_limit_is_refused_before_anything_is_allocated(size: int, count: int) -> None:
    # a bogus length of the pickle, of the buffer list, or of its buffers together; one byte too many
    lengths = struct.pack(f"<{min(count, 2)}Q", *[2**19] * min(count, 2))  # (16, 2): 2**20 + 32 bytes
    stream = io.BufferedReader(io.BytesIO(struct.pack("<QI", size, count) + lengths))
    with pytest.raises(FrameTooLong, match="over the 1,048,576 accepted"):
        # typeshed's BufferedReader is invariant in its raw stream: one over a BytesIO is not the default
        read_frame(stream, 2**20)  # type: ignore[arg-type]
    # within its limit a frame is read as it always was
    frame = encode(("ok", IMAGE))
    data, buffers = read_frame(io.BufferedReader(io.BytesIO(b"".join(frame))), reply_limit(frame))
    assert np.array_equal(decode(data, buffers)[1], IMAGE)


def test_a_bogus_reply_header_once_is_retried_in_a_fresh_worker(
    tmp_path: Path, scribbling: ConditionKind
) -> None:
    marker = tmp_path / "scribble-once"
    marker.write_text("x")
    scribbling.marker = str(marker)  # type: ignore[attr-defined]
    p = CorruptionProcesses(1)
    try:
        assert np.array_equal(p.apply(Condition("scribbling", "once", 1), IMAGE, 2), 255 - IMAGE)
        assert not marker.exists()
        counts = p.to_json()
        assert counts["worker_deaths"] == 1 and counts["retried_alone"] == 1
        assert counts["applied_in_thread"] == 0
    finally:
        p.close()


def test_a_condition_s_meaning_is_found_once_per_name(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = meaning  # what processes calls

    def counted(behaviour: Any, condition: Condition) -> str | None:
        calls.append(condition.id)
        return real(behaviour, condition)

    monkeypatch.setattr(processes_module, "meaning", counted)
    p = CorruptionProcesses(1)
    try:
        for seed in SEEDS:
            for cond in (RESIZE, ASPECT):
                assert np.array_equal(p.apply(cond, IMAGE, seed), cond.apply_image(IMAGE, seed))
        assert sorted(calls) == sorted([RESIZE.id, ASPECT.id])
        assert p.to_json()["applied_in_thread"] == 0
    finally:
        p.close()


def _invert(image: ImageArray, severity: int, seed: int) -> ImageArray:
    """An image corruption at module level, registered only at run time."""
    return (255 - image).astype(np.uint8)


def test_a_corruption_re_registered_between_two_calls_is_seen() -> None:
    resize = IMAGE_PERTURBATIONS.get("resize")
    cond = RESIZE
    built_in = cond.apply_image(IMAGE, 1)
    p = CorruptionProcesses(1)
    try:
        assert np.array_equal(p.apply(cond, IMAGE, 1), built_in)
        assert p.to_json()["applied_in_thread"] == 0  # in the worker
        IMAGE_PERTURBATIONS.register("resize", ImagePerturbation(_invert, "geometry", False), replace=True)
        for seed in (1, 2):  # another function in a worker: here, each time
            assert np.array_equal(p.apply(cond, IMAGE, seed), 255 - IMAGE)
        assert p.to_json()["applied_in_thread"] == 2
        IMAGE_PERTURBATIONS.register("resize", resize, replace=True)
        assert np.array_equal(p.apply(cond, IMAGE, 1), built_in)
        assert p.to_json()["applied_in_thread"] == 2  # the built-in one again: in the worker again
    finally:
        p.close()
        IMAGE_PERTURBATIONS.register("resize", resize, replace=True)


UNGUARDED = """
import json
import numpy as np
from argus_eval.perturb.conditions import Condition
from argus_eval.perturb.parallel import corrupt_many

print("the script ran", flush=True)  # once: a worker that imports __main__ runs it again
conditions = [Condition.parse(c) for c in ("image:resize@2", "image:aspect@4", "image:resize@5",
                                           "text:typos@1")]
images = [np.random.default_rng(i).integers(0, 256, (30, 38, 3), dtype=np.uint8) for i in range(4)]
seeds = [5, 6, 7, 8]
serial = corrupt_many(images, conditions, seeds, processes=1)
pooled = corrupt_many(images, conditions, seeds, processes=2)
print(json.dumps([bool(np.array_equal(a, b)) for a, b in zip(serial, pooled)]), flush=True)
"""


def test_corrupt_many_from_a_script_without_a_main_guard_runs_the_script_once(tmp_path: Path) -> None:
    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent(UNGUARDED), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
    ran, equal = done.stdout.splitlines()
    assert ran == "the script ran"
    assert json.loads(equal) == [True] * 4

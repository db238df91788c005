"""The corruption workers (perturb/processes.py, perturb/worker_process.py) against how a caller's process
is set up and how a caller forgets them: a parent started with its stdin or stdout closed (os.pipe then
hands out fd 0 or 1, which the worker's own stdin and stdout would replace), and a make_pool pool
dropped without close() (its workers must end, and be reaped, as a ProcessPoolExecutor's did)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

from argus_eval.perturb.conditions import Condition
from argus_eval.perturb.parallel import corrupt_many, make_pool

IMAGE = np.random.default_rng(5).integers(0, 256, (30, 38, 3), dtype=np.uint8)
RESIZE = Condition.parse("image:resize@2")  # PIL alone: a fresh worker computes it without ImageNet-C

CLOSED_STDIO = """
import json, os, sys, warnings
import numpy as np
from argus_eval.perturb.conditions import Condition
from argus_eval.perturb.processes import CorruptionProcesses

for fd in map(int, sys.argv[1].split(",")):
    os.close(fd)  # as a parent started with `<&-` or `>&-`: os.pipe hands out these numbers first
warnings.simplefilter("error")  # the fallback warning is then said on stderr
image = np.random.default_rng(5).integers(0, 256, (30, 38, 3), dtype=np.uint8)
condition = Condition.parse("image:resize@2")
with CorruptionProcesses(1) as procs:
    equal = [bool(np.array_equal(procs.apply(condition, image, s), condition.apply_image(image, s)))
             for s in (0, 1)]
    counts = procs.to_json()
os.write(2, json.dumps({"equal": equal, "counts": counts}).encode() + b"\\n")
"""


@pytest.mark.parametrize("closed", ["0", "1", "0,1"])
def test_a_parent_with_its_stdin_or_stdout_closed_still_starts_workers(tmp_path: Path, closed: str) -> None:
    script = tmp_path / "closed_stdio.py"
    script.write_text(textwrap.dedent(CLOSED_STDIO), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), closed], stdin=subprocess.DEVNULL, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1, lines  # no CorruptionWorkerWarning: the workers started
    said = json.loads(lines[0])
    assert said["equal"] == [True, True]
    counts = said["counts"]
    assert counts["workers_started"] == 1 and counts["start_failures"] == 0
    assert counts["applied_in_thread"] == 0


def _gone(pid: int) -> bool:
    """Whether pid has exited and been reaped (a zombie is not gone: nothing waited for it)."""
    try:
        psutil.Process(pid).status()
    except psutil.NoSuchProcess:
        return True
    return False


def _workers() -> set[int]:
    """This process's corruption workers, running or zombie."""
    return {
        c.pid for c in psutil.Process().children() if "argus_eval.perturb.worker" in " ".join(_cmdline(c))
    }


def _cmdline(child: psutil.Process) -> list[str]:
    try:
        return list(child.cmdline())
    except psutil.Error:  # a zombie's command line cannot be read: its pid is what counts
        return ["argus_eval.perturb.worker"]


def test_a_pool_dropped_without_close_ends_and_reaps_its_workers() -> None:
    before = _workers()
    pool = make_pool(2)
    out = corrupt_many([IMAGE] * 4, [RESIZE] * 4, [0, 1, 2, 3], pool=pool)
    assert all(np.array_equal(o, RESIZE.apply_image(IMAGE, s)) for o, s in zip(out, range(4), strict=True))
    started = _workers() - before
    assert len(started) == 2
    del pool  # a notebook's pool, never closed
    gc.collect()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not all(_gone(pid) for pid in started):
        time.sleep(0.05)
    assert all(_gone(pid) for pid in started), [psutil.Process(p).status() for p in started if not _gone(p)]

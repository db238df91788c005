"""The batch writer under attack, on a real store file and real threads: a full disk with writes queued,
the model's thread failing or interrupted with writes queued, a slow disk (another run holding the write
lock), the queue's bound, and close while writes wait."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from contextlib import closing
from pathlib import Path

import pytest

from argus_eval.errors import OutputError
from argus_eval.runner.execute.writer import DEPTH, BatchWriter
from argus_eval.runner.store import Store
from argus_eval.tasks.records import Record
from store_fixtures import batch, hold_write_lock, records_per_batch

BATCH = 3


def _full_after(st: Store, pages: int) -> None:
    used = st._db.execute("PRAGMA page_count").fetchone()[0]
    st._db.execute(f"PRAGMA max_page_count = {used + pages}")  # SQLite's own 'database or disk is full'


def test_a_full_disk_with_writes_queued_is_raised_once_naming_the_file_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        _full_after(st, 1)
        other = hold_write_lock(path)
        w = BatchWriter(st)
        for b in range(DEPTH):  # queued behind the slow disk; every one of them will not fit
            w.write("c", batch(b, BATCH, chars=3000), {})
        other.execute("COMMIT")
        other.close()
        with pytest.raises(OutputError) as first:
            w.write("c", batch(DEPTH, BATCH, chars=3000), {})
        assert f"cannot write {path}: the disk is full" in str(first.value)
        assert "free some space" in str(first.value)
        w.close()  # the later writes were still run, and failed alike: told once, not again
        assert not st._db.in_transaction
    with Store(path) as st:
        assert st.count() == 0


def test_a_full_disk_on_the_last_batch_is_raised_by_close(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        w = BatchWriter(st)
        w.write("c", batch(0, BATCH), {})
        w.close()
        _full_after(st, 1)
        w = BatchWriter(st)
        w.write("c", batch(1, BATCH, chars=9000), {})
        with pytest.raises(OutputError, match="the disk is full"):
            w.close()
        assert records_per_batch(st, "c") == {"b000": BATCH}


def test_the_model_failing_with_writes_queued_still_stores_them(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        other = hold_write_lock(path)
        threading.Timer(0.3, other.execute, ("COMMIT",)).start()
        with pytest.raises(RuntimeError, match="model crashed"), closing(BatchWriter(st)) as w:
            for b in range(DEPTH):
                w.write("c", batch(b, BATCH), {})
            raise RuntimeError("model crashed")  # the model's own error, not masked by the writer
        other.close()
    with Store(path) as st:  # the rerun finds every queued batch, each whole
        assert records_per_batch(st, "c") == {f"b{b:03d}": BATCH for b in range(DEPTH)}


def test_writes_keep_their_order_on_ahold_write_lock(tmp_path: Path) -> None:
    # the same sample again and again with a new input stamp: the last one written must be the last one
    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        other = hold_write_lock(path)
        threading.Timer(0.2, other.execute, ("COMMIT",)).start()
        with closing(BatchWriter(st)) as w:
            for k in range(DEPTH * 3):
                w.write("c", [Record("a", {"k": k})], {"a": f"stamp{k}"})
        other.close()
        assert st.read("c")["a"].output == {"k": DEPTH * 3 - 1}
        assert st.states("c") == {"a": (f"stamp{DEPTH * 3 - 1}", False)}


def test_the_model_waits_when_depth_batches_are_queued(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        other = hold_write_lock(path)
        w = BatchWriter(st)
        for b in range(DEPTH):
            w.write("c", batch(b, BATCH), {})
        blocked = threading.Thread(target=w.write, args=("c", batch(DEPTH, BATCH), {}))
        blocked.start()
        blocked.join(0.3)
        assert blocked.is_alive()  # memory stays bounded: the model's thread waits for the disk
        other.execute("COMMIT")
        other.close()
        blocked.join(30)
        assert not blocked.is_alive()
        w.close()
        assert records_per_batch(st, "c") == {f"b{b:03d}": BATCH for b in range(DEPTH + 1)}


_INTERRUPTED = """
import sqlite3, sys, threading, time
from contextlib import closing
from pathlib import Path
from argus_eval.runner.execute.writer import BatchWriter
from argus_eval.runner.store import Store
from argus_eval.tasks.records import Record

path = Path(sys.argv[1])
st = Store(path)
other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
other.execute("BEGIN IMMEDIATE")  # a slow disk: the writes wait
with closing(BatchWriter(st)) as w:
    for b in range(3):
        w.write("c", [Record(f"b{b}_{i}", {"k": i}) for i in range(3)], {})
    threading.Timer(0.5, other.execute, ("COMMIT",)).start()
    print("queued", flush=True)
    while True:
        time.sleep(0.01)  # the model at work when Ctrl-C comes
"""


def test_ctrl_c_with_writes_queued_stores_them_and_the_process_exits(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    child = subprocess.Popen(
        [sys.executable, "-c", _INTERRUPTED, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "queued"
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=30)  # does not hang on the writer's thread
    assert "KeyboardInterrupt" in err and child.returncode != 0
    with Store(path) as st:
        assert records_per_batch(st, "c") == {"b0": 3, "b1": 3, "b2": 3}

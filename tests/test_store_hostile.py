"""The store under attack: Ctrl-C while a write waits for another run's lock, a full disk mid-batch, a
process killed mid-write, readers on other threads while batches are written, misuse of the connection."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from argus_eval.errors import OutputError, StoreError
from argus_eval.runner.store import Store
from store_fixtures import batch, hold_write_lock, records_per_batch

BATCH = 5


def test_ctrl_c_while_a_write_waits_for_another_runs_lock_leaves_no_transaction_open(tmp_path: Path) -> None:
    # A real SIGINT reaches the main thread while BEGIN IMMEDIATE waits; it is raised as soon as BEGIN
    # returns. The store must not keep that transaction (and the write lock) open: the next write would
    # otherwise be told the file is damaged, and other runs would wait on a lock nobody releases.
    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        other = hold_write_lock(path)
        main = threading.get_ident()

        def interrupt_then_release() -> None:
            time.sleep(0.3)
            signal.pthread_kill(main, signal.SIGINT)
            time.sleep(0.1)
            other.execute("COMMIT")

        t = threading.Thread(target=interrupt_then_release)
        t.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                st.write("c", batch(0, BATCH))
        finally:
            t.join()
        assert not st._db.in_transaction  # the write lock is free for other runs
        st.write("c", batch(1, BATCH))  # the next write works: nothing is called damaged
        assert records_per_batch(st, "c") in ({"b001": BATCH}, {"b000": BATCH, "b001": BATCH})
    other.close()
    with Store(path) as st:
        assert set(records_per_batch(st, "c").values()) == {BATCH}


def test_full_disk_mid_batch_keeps_every_batch_whole_and_the_store_reopens(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        pages = st._db.execute("PRAGMA page_count").fetchone()[0]
        st._db.execute(f"PRAGMA max_page_count = {pages + 8}")  # SQLite's own 'database or disk is full'
        written = 0
        with pytest.raises(OutputError) as err:
            for b in range(50):
                st.write("c", batch(b, BATCH, chars=1500))
                written += 1
        msg = str(err.value)
        assert f"cannot write {path}: the disk is full" in msg and "free some space" in msg
        assert not st._db.in_transaction
        assert st.get_meta("schema_version") == "1"  # still readable after the failure
    with Store(path) as st:  # a rerun: every finished batch whole, the failed one absent
        per = records_per_batch(st, "c")
        assert len(per) == written > 0 and set(per.values()) == {BATCH}
        st.write("c", batch(written, BATCH, chars=1500))  # room again: the rerun goes on
        assert st.count("c") == (written + 1) * BATCH


_KILLED_WRITER = """
import sys, time
from pathlib import Path
from argus_eval.runner.execute.writer import BatchWriter
from argus_eval.runner.store import Store
from argus_eval.tasks.records import Record

st = Store(Path(sys.argv[1]))
w = BatchWriter(st)
for b in range(100000):
    w.write("c", [Record(f"b{b:05d}_{i}", {"text": "x" * 4000}) for i in range(20)], {})
    if b == 3:
        print("writing", flush=True)
"""


def test_a_run_killed_mid_write_leaves_every_batch_whole_or_absent(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "writing"
        time.sleep(0.2)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
    with Store(path) as st:
        per = records_per_batch(st, "c")
        assert per and set(per.values()) == {20}
        assert len(st.read("c")) == 20 * len(per)  # every kept record decodes


def test_readers_on_other_threads_see_whole_batches_while_a_writer_commits(tmp_path: Path) -> None:
    # One connection shared: a reader must never see a batch half written (its rows are inside the
    # writer's open transaction), and no read may fail with a cursor misuse.
    with Store(tmp_path / "s.sqlite") as st:
        st.describe_cell("c", {"k": 1})
        done = threading.Event()
        seen: list[int] = []
        failures: list[BaseException] = []

        def read() -> None:
            try:
                while not done.is_set():
                    seen.append(st.count("c"))
                    assert len(st.raw_rows("c")) % BATCH == 0
                    assert len(st.read("c")) % BATCH == 0
                    assert [c for c, _ in st.iter_cells()] == ["c"]
                    assert len(st.states("c")) % BATCH == 0
            except BaseException as e:
                failures.append(e)

        readers = [threading.Thread(target=read) for _ in range(3)]
        for t in readers:
            t.start()
        try:
            for b in range(60):
                st.write("c", batch(b, BATCH))
        finally:
            done.set()
            for t in readers:
                t.join()
        assert not failures, failures[0]
        assert all(n % BATCH == 0 for n in seen) and st.count("c") == 60 * BATCH


def test_misuse_of_the_connection_is_not_called_a_damaged_file(tmp_path: Path) -> None:
    # A write after close is a bug in the caller, not damage: telling the user to move the store aside
    # (and compute every record afresh) would throw good records away.
    path = tmp_path / "s.sqlite"
    st = Store(path)
    st.write("c", batch(0, BATCH))
    st.close()
    with pytest.raises(sqlite3.ProgrammingError, match="closed database"):
        st.write("c", batch(1, BATCH))
    with Store(path) as again:
        assert again.count("c") == BATCH


def test_a_real_damaged_file_is_still_named_damaged(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match=r"is unreadable .*move it aside"):
        Store(path)


def test_a_store_locked_by_another_run_is_named_locked_not_damaged(tmp_path: Path) -> None:
    # Another run holding the write lock past the busy timeout: the file is fine, and moving it aside
    # (computing every record afresh) would be the wrong advice.
    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        st.write("c", batch(0, BATCH))
        st._db.execute("PRAGMA busy_timeout = 50")  # the store waits a minute; the test 50 ms
        other = hold_write_lock(path)
        try:
            with pytest.raises(StoreError) as err:
                st.write("c", batch(1, BATCH))
        finally:
            other.close()
        msg = str(err.value)
        assert f"store {path} is locked by another process" in msg and "damaged" not in msg
        assert not st._db.in_transaction
        st.write("c", batch(1, BATCH))  # once the other run lets go
        assert st.count("c") == 2 * BATCH

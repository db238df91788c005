"""The record store: atomic batches, idempotent writes, arrays without pickles, schema checks."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from argus_eval.errors import StoreError
from argus_eval.runner.array_blob import MAGIC
from argus_eval.runner.store import Store
from argus_eval.tasks.records import Record


def test_roundtrip_records_and_arrays(tmp_path: Path) -> None:
    emb = np.arange(12, dtype=np.float32).reshape(3, 4)
    with Store(tmp_path / "s.sqlite") as st:
        st.write("cellA", [Record("a", {"x": 1}, {"texts": emb}), Record("b", None, error="input: bad")])
        got = st.read("cellA")
    assert got["a"].output == {"x": 1}
    np.testing.assert_array_equal(got["a"].arrays["texts"], emb)
    assert got["a"].arrays["texts"].dtype == np.float32
    assert got["b"].error == "input: bad" and got["b"].output is None


def test_writes_are_idempotent_and_persist(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        st.write("c", [Record("a", {"v": 1})])
        st.write("c", [Record("a", {"v": 2}), Record("b", {"v": 3})])  # existing key untouched
    with Store(path) as st:
        assert st.done_ids("c") == {"a", "b"}
        assert st.read("c")["a"].output == {"v": 1}
        assert st.count() == 2


def test_wal_mode_and_no_pickle(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        st.write("c", [Record("a", {"v": 1}, {"e": np.ones(2, dtype=np.float32)})])
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    blob = db.execute("SELECT arrays FROM records").fetchone()[0]
    # a typed header and the raw float32 bytes (runner/array_blob.py), never a pickle stream
    assert blob.startswith(MAGIC) and blob.endswith(np.ones(2, dtype=np.float32).tobytes())
    assert b'[["e","<f4",[2]]]' in blob
    db.close()


def test_a_record_kept_as_npz_by_an_older_store_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        st.write("c", [Record("a", {"v": 1}, {"e": np.ones(2, dtype=np.float32)})])
    buf = io.BytesIO()
    np.savez(buf, e=np.arange(3, dtype=np.int16))
    db = sqlite3.connect(path)
    db.execute("UPDATE records SET arrays=?", (buf.getvalue(),))
    db.commit()
    db.close()
    with Store(path) as st:
        got = st.read("c")["a"].arrays["e"]
    assert got.dtype == np.int16 and got.tolist() == [0, 1, 2]


def test_schema_version_mismatch_is_named(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        st.set_meta("schema_version", "999")
    with pytest.raises(StoreError, match=r"schema version 999.*fresh --out"):
        Store(path)


def test_corrupt_store_is_named(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="unreadable"):
        Store(path)

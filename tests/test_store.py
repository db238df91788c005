"""The record store: atomic batches, idempotent writes, arrays without pickles, schema checks."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from argus_eval.errors import StoreError
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
    assert blob[:2] == b"PK"  # an npz (zip of .npy), never a pickle stream
    db.close()


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

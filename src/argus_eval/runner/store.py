"""The durable record store: one SQLite file (WAL mode) holding every per-sample record of a run.

It is the single source of truth: scoring and reports read from it, never from a model. Records are
written one batch per transaction, so a run killed at any point loses at most the batch in flight.
Arrays (embeddings) are stored as raw bytes under a typed header (runner/array_blob.py): no pickles anywhere.
Text a model answered is stored by data/text.py's rule (each lone surrogate becomes U+FFFD), on writing
and on reading, so no answer can make samples.jsonl, a metric or a rerun fail. A damaged file (bytes
overwritten in its middle) is one StoreError naming it and what to do.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from argus_eval.data.text import repair_text, repair_value
from argus_eval.errors import ArgusError, OutputError, StoreError
from argus_eval.runner.array_blob import pack as pack_arrays
from argus_eval.runner.array_blob import unpack as unpack_arrays
from argus_eval.runner.seal import DamagedPartError, finite_arrays, seal, unseal
from argus_eval.runner.write.outputs import writing
from argus_eval.tasks.records import Record

SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    cell TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    output TEXT,
    arrays BLOB,
    error TEXT,
    seconds REAL NOT NULL,
    stamp TEXT,
    PRIMARY KEY (cell, sample_id)
);
CREATE TABLE IF NOT EXISTS cells (cell TEXT PRIMARY KEY, description TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS profiles (key TEXT PRIMARY KEY, profile TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS features (key TEXT PRIMARY KEY, arrays BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS scored (key TEXT PRIMARY KEY, value BLOB NOT NULL);
"""


class Store:
    """SQLite-backed store of per-sample records, keyed by (cell key, sample id)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # kept region features found damaged and deleted (get_features), by reason: run_log.json
        self.features_rejected: dict[str, int] = {}
        self._lock = threading.RLock()
        with writing(path.parent):
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # one connection shared by the run's threads (the executor writes batches from a writer
            # thread): every statement and transaction holds self._lock (_writes)
            self._db = sqlite3.connect(str(path), timeout=60, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            self._add_stamp_column()
        except sqlite3.OperationalError as e:
            raise self._write_error(e) from None
        except sqlite3.DatabaseError as e:
            raise self._damaged(e) from None
        version = self.get_meta("schema_version")
        if version is None:
            self.set_meta("schema_version", SCHEMA_VERSION)
        elif version != SCHEMA_VERSION:
            raise StoreError(
                f"store {path} has schema version {version}, this ARGUS-EVAL writes {SCHEMA_VERSION}; "
                "use a fresh --out directory"
            )

    def _add_stamp_column(self) -> None:
        # Stores written before input stamps existed lack the column; their records read as stale.
        cols = {str(r[1]) for r in self._db.execute("PRAGMA table_info(records)").fetchall()}
        if "stamp" not in cols:
            self._db.execute("ALTER TABLE records ADD COLUMN stamp TEXT")

    def _write_error(self, e: sqlite3.OperationalError) -> ArgusError:
        """What a failed write means: a full disk, another run's lock, a read-only run folder, or (else) a
        broken store."""
        text = str(e).lower()
        if "full" in text:
            return OutputError(
                f"cannot write {self.path}: the disk is full ({e}); free some space or copy the run folder "
                "elsewhere and rerun there: every finished batch is kept"
            )
        if "locked" in text:  # another process kept the write lock past the timeout: the file is fine
            return StoreError(
                f"store {self.path} is locked by another process ({e}): wait for the other run on this "
                "--out to finish (or stop it) and rerun, or give another --out; every finished batch is kept"
            )
        if "readonly" in text or "read-only" in text or not os.access(self.path.parent, os.W_OK):
            return OutputError(
                f"cannot write {self.path}: the run folder is read-only ({e}); give another --out or make "
                "it writable (nothing in it was changed or lost)"
            )
        return self._damaged(e)

    def _damaged(self, e: sqlite3.DatabaseError) -> StoreError:
        return StoreError(
            f"store {self.path} is unreadable ({e}): the file is damaged; move it aside (e.g. rename it "
            "to store.sqlite.broken) and rerun on the same --out to compute every record afresh, or give "
            "another --out"
        )

    @contextmanager
    def _writes(self) -> Iterator[None]:
        """Any SQLite failure inside: a full disk, a read-only folder, or a damaged file, named once; the
        connection is this thread's alone meanwhile (a transaction is never interleaved with another's)."""
        with self._lock:
            try:
                yield
            except sqlite3.OperationalError as e:
                raise self._write_error(e) from None
            except sqlite3.ProgrammingError:
                raise  # misuse (a closed connection, a wrong binding): a bug to fix, never a damaged file
            except sqlite3.DatabaseError as e:
                raise self._damaged(e) from None

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """Every row of a query, read inside the guard (a damaged page can fail mid-iteration)."""
        with self._writes():
            return self._db.execute(sql, params).fetchall()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- meta -----------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        rows = self._rows("SELECT value FROM meta WHERE key=?", (key,))
        return None if not rows else str(rows[0][0])

    def set_meta(self, key: str, value: str) -> None:
        with self._writes():
            self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # --- records --------------------------------------------------------------------------------
    def describe_cell(self, cell: str, description: Mapping[str, Any]) -> None:
        with self._writes():
            self._db.execute(
                "INSERT OR IGNORE INTO cells(cell, description) VALUES (?, ?)",
                (cell, json.dumps(description, sort_keys=True)),
            )

    def done_ids(self, cell: str) -> set[str]:
        """Sample ids that already have a record (success or recorded failure) in this cell."""
        rows = self._rows("SELECT sample_id FROM records WHERE cell=?", (cell,))
        return {str(r[0]) for r in rows}

    def states(self, cell: str) -> dict[str, tuple[str | None, bool]]:
        """sample id -> (input stamp, failed) of every record of a cell."""
        rows = self._rows("SELECT sample_id, stamp, error IS NOT NULL FROM records WHERE cell=?", (cell,))
        return {
            str(sid): (None if stamp is None else str(stamp), bool(failed)) for sid, stamp, failed in rows
        }

    def write(self, cell: str, records: Iterable[Record], stamps: Mapping[str, str] | None = None) -> None:
        """Write a batch of records atomically (one transaction).

        An existing record is replaced only when it failed or its input stamp differs (a retry or a
        recomputation); a good, current record is left untouched, so concurrent runs never clobber."""
        stamps = stamps or {}
        rows = [
            (
                cell,
                r.sample_id,
                None if r.output is None else json.dumps(repair_value(r.output), sort_keys=True),
                pack_arrays(r.arrays),
                None if r.error is None else repair_text(r.error),
                float(r.seconds),
                stamps.get(r.sample_id),
            )
            for r in records
        ]
        with self._writes(), self._transaction():
            self._db.executemany(
                "INSERT INTO records(cell, sample_id, output, arrays, error, seconds, stamp) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(cell, sample_id) DO UPDATE SET "
                "output=excluded.output, arrays=excluded.arrays, error=excluded.error, "
                "seconds=excluded.seconds, stamp=excluded.stamp "
                "WHERE records.error IS NOT NULL OR records.stamp IS NOT excluded.stamp",
                rows,
            )

    def delete(self, cell: str, sample_ids: Iterable[str]) -> None:
        """Remove those records of a cell (a damaged one about to be made again), in one transaction."""
        ids = [(cell, sid) for sid in sample_ids]
        if ids:
            with self._writes(), self._transaction():
                self._db.executemany("DELETE FROM records WHERE cell=? AND sample_id=?", ids)

    def raw_rows(self, cell: str) -> list[tuple[str, str | None, bytes | None, str | None, float]]:
        """A cell's records as stored (sample id, output JSON, arrays, error, seconds), by sample id: cheap
        to hash, and decode() turns them into records."""
        rows = self._rows(
            "SELECT sample_id, output, arrays, error, seconds FROM records WHERE cell=? ORDER BY sample_id",
            (cell,),
        )
        return [(str(sid), out, arr, err, float(sec)) for sid, out, arr, err, sec in rows]

    def decode(
        self, cell: str, rows: Iterable[tuple[str, str | None, bytes | None, str | None, float]]
    ) -> dict[str, Record]:
        """Records of raw_rows by sample id (StoreError naming a corrupt one)."""
        out: dict[str, Record] = {}
        for sid, output, arrays, error, seconds in rows:
            try:
                out[sid] = Record(
                    sample_id=sid,
                    # repaired on reading too: a store written before the rule may hold a lone surrogate
                    output=None if output is None else repair_value(json.loads(output)),
                    arrays=unpack_arrays(arrays),
                    error=None if error is None else repair_text(str(error)),
                    seconds=seconds,
                )
            except (ValueError, TypeError, OSError, EOFError, zipfile.BadZipFile) as e:
                raise StoreError(
                    f"store {self.path}: record {sid!r} of cell {cell} is corrupt ({type(e).__name__}); "
                    f"delete that row or use a fresh --out"
                ) from None
        return out

    def read(self, cell: str) -> dict[str, Record]:
        """All records of a cell by sample id."""
        return self.decode(cell, self.raw_rows(cell))

    def count(self, cell: str | None = None) -> int:
        if cell is None:
            return int(self._rows("SELECT COUNT(*) FROM records")[0][0])
        return int(self._rows("SELECT COUNT(*) FROM records WHERE cell=?", (cell,))[0][0])

    # --- efficiency profiles --------------------------------------------------------------------
    def get_profile(self, key: str) -> dict[str, Any] | None:
        rows = self._rows("SELECT profile FROM profiles WHERE key=?", (key,))
        return None if not rows else dict(json.loads(rows[0][0]))

    def put_profile(self, key: str, profile: Mapping[str, Any]) -> None:
        with self._writes():
            self._db.execute(
                "INSERT OR REPLACE INTO profiles(key, profile) VALUES (?, ?)",
                (key, json.dumps(profile, sort_keys=True)),
            )

    # --- per-image feature arrays (a detector's regions; runner/inputs/feature_store.py) ----------------
    def get_features(self, key: str) -> dict[str, np.ndarray] | None:
        """The arrays kept under key; None when there are none, or when they fail their seal, do not
        decode or hold a non-finite number: then the entry is deleted (so that the features made again
        are kept) and the reason added to features_rejected."""
        rows = self._rows("SELECT arrays FROM features WHERE key=?", (key,))
        if not rows:
            return None
        try:
            arrays = finite_arrays(unseal(bytes(rows[0][0])), "region features")
        except DamagedPartError as e:
            reason = str(e)
            with self._writes():  # the count too: input threads may find damaged entries at once
                self.features_rejected[reason] = self.features_rejected.get(reason, 0) + 1
                self._db.execute("DELETE FROM features WHERE key=?", (key,))
            return None
        return arrays

    def put_features(self, key: str, arrays: Mapping[str, np.ndarray]) -> int:
        """Keep arrays under key, sealed (the first write wins); the bytes stored."""
        blob = seal(pack_arrays(arrays) or b"")
        with self._writes():
            self._db.execute("INSERT OR IGNORE INTO features(key, arrays) VALUES (?, ?)", (key, blob))
        return len(blob)

    def feature_bytes(self) -> int:
        return int(self._rows("SELECT COALESCE(SUM(LENGTH(arrays)), 0) FROM features")[0][0])

    # --- scored parts (runner/score/score_cache.py): cell results and finish rows by content hash --------
    def get_scored(self, keys: Iterable[str]) -> dict[str, bytes]:
        """The stored values of those keys that have one."""
        wanted = sorted(set(keys))
        out: dict[str, bytes] = {}
        for i in range(0, len(wanted), 500):  # SQLite caps the number of bound parameters
            part = wanted[i : i + 500]
            marks = ",".join("?" * len(part))
            for k, v in self._rows(f"SELECT key, value FROM scored WHERE key IN ({marks})", tuple(part)):
                out[str(k)] = bytes(v)
        return out

    def put_scored(self, items: Mapping[str, bytes]) -> None:
        """Keep values by key in one transaction (a cell's finish rows grow as new sums are scored)."""
        if not items:
            return
        with self._writes(), self._transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO scored(key, value) VALUES (?, ?)", sorted(items.items())
            )

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One transaction (inside _writes), never left open: a transaction left open would keep the write
        lock from other runs, and this store's next BEGIN would fail as if the file were damaged."""
        if self._db.in_transaction:  # left by an interrupted one: all run under the lock, so it is stale
            self._db.execute("ROLLBACK")
        try:
            # inside the try: Ctrl-C while BEGIN waits for another run's lock is raised as it returns
            self._db.execute("BEGIN IMMEDIATE")
            yield
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:  # SQLite may have rolled back already (e.g. disk full)
                self._db.execute("ROLLBACK")
            raise

    def iter_cells(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for cell, desc in self._rows("SELECT cell, description FROM cells ORDER BY cell"):
            yield str(cell), dict(json.loads(desc))

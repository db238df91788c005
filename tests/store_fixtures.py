"""Shared by the store's and the batch writer's hostile tests (test_store_hostile.py,
test_writer_hostile.py): batches of records named by their batch, the records stored per batch, and
another run's connection holding the store's write lock."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from argus_eval.runner.store import Store
from argus_eval.tasks.records import Record


def batch(b: int, size: int, chars: int = 100) -> list[Record]:
    """Batch b: size records "bNNN_i", each holding a text of about chars characters."""
    return [Record(f"b{b:03d}_{i}", {"text": f"{b}:" + "x" * chars}) for i in range(size)]


def records_per_batch(st: Store, cell: str) -> dict[str, int]:
    """Records stored per batch prefix: a consistent store holds every batch whole or not at all."""
    per: dict[str, int] = {}
    for sid in st.done_ids(cell):
        per[sid.split("_")[0]] = per.get(sid.split("_")[0], 0) + 1
    return per


def hold_write_lock(path: Path) -> sqlite3.Connection:
    """Another run's connection in the middle of its own write: every write of ours waits until it ends
    (a slow disk)."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    return other

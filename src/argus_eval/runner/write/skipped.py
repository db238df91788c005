"""The records the loaders skipped, named where a person looks: results.json's notes (the first few of
each dataset, then a count) and skipped.jsonl beside samples.jsonl (every one: dataset, file, record,
reason)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from argus_eval.data.atomic import atomic_text
from argus_eval.data.types import Dataset

# Skipped records of a dataset named in the notes (and so on the console); skipped.jsonl has them all.
NOTED_SKIPS = 3


def skip_notes(datasets: Sequence[Dataset]) -> list[str]:
    """One note per named skip of each dataset, and one counting the rest."""
    notes = []
    for ds in datasets:
        if not ds.skipped:
            continue
        n = len(ds.skipped)
        notes.append(
            f"dataset {ds.name}: {n} annotation record(s) skipped by the loader, each named in skipped.jsonl"
        )
        notes += [f"dataset {ds.name}: skipped {s.line()}" for s in ds.skipped[:NOTED_SKIPS]]
        if n > NOTED_SKIPS:
            notes.append(f"dataset {ds.name}: {n - NOTED_SKIPS} more skipped record(s) in skipped.jsonl")
    return notes


def write_skipped(datasets: Sequence[Dataset], path: Path) -> int:
    """skipped.jsonl: one JSON object per skipped record of every dataset (empty when none); returns
    how many lines it wrote."""
    n = 0
    with atomic_text(path) as fh:
        for ds in datasets:
            for rec in ds.skipped:
                fh.write(json.dumps({"dataset": ds.name, **rec.to_json()}, sort_keys=True) + "\n")
                n += 1
    return n

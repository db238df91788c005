"""Streaming reader of samples.jsonl (one JSON object per sample and cell).

A run can hold hundreds of thousands of lines, so nothing here keeps the whole file in memory unless
the caller asks for it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from argus_eval.errors import ResultsError

CellKey = tuple[str, str, str, str]
_KEY_FIELDS = ("model", "task", "dataset", "condition")


def iter_samples(path: Path) -> Iterator[dict[str, Any]]:
    """Every record of samples.jsonl; a missing file yields nothing, a broken line is a ResultsError."""
    if not path.exists():
        return
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as e:
                raise ResultsError(f"{path}:{lineno}: not a JSON object ({e})") from None
            if not isinstance(rec, dict):
                raise ResultsError(f"{path}:{lineno}: not a JSON object")
            for k in (*_KEY_FIELDS, "sample_id"):
                if not isinstance(rec.get(k), str):
                    raise ResultsError(f"{path}:{lineno}: field {k!r} is missing or not a string")
            score = rec.get("score")
            if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
                raise ResultsError(f"{path}:{lineno}: field 'score' must be a number or null, got {score!r}")
            yield rec


def cell_key(rec: dict[str, Any]) -> CellKey:
    """(model, task, dataset, condition) of a record."""
    return (rec["model"], rec["task"], rec["dataset"], rec["condition"])


def scores_by_cell(path: Path) -> dict[CellKey, dict[str, float]]:
    """cell -> sample_id -> score, for the scored samples only (failed ones have no score)."""
    out: dict[CellKey, dict[str, float]] = {}
    for rec in iter_samples(path):
        if rec.get("score") is not None:
            out.setdefault(cell_key(rec), {})[rec["sample_id"]] = float(rec["score"])
    return out

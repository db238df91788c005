"""scorecard.csv and cells.csv: the numbers of a run's results as flat tables for spreadsheets."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from argus_eval.data.atomic import atomic_write_text
from argus_eval.report.tables import scorecard_intervals
from argus_eval.results_model import Results
from argus_eval.results_model.notebook import scorecard_rows

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _safe(v: Any) -> Any:
    """Numbers as they are; text that a spreadsheet would run as a formula gets a leading quote."""
    if isinstance(v, str) and v.startswith(_FORMULA_START):
        return "'" + v
    return "" if v is None else v


def _write(rows: Sequence[Sequence[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for row in rows:
        w.writerow([_safe(v) for v in row])
    return buf.getvalue()


def scorecard_csv(results: Results) -> str:
    """One row per model: each axis with its interval bounds and undefined reason, ranks and shift (the
    rows Results.to_pandas gives too)."""
    header, rows = scorecard_rows(results)
    return _write([header, *rows])


def cells_csv(results: Results) -> str:
    """One row per cell: key, protocol, counts, primary with interval, then every scalar metric."""
    metrics = [c.scalar_metrics() for c in results.cells]
    metric_names = sorted({k for m in metrics for k in m})
    ivs = scorecard_intervals(results)
    header = [
        "model",
        "task",
        "dataset",
        "condition",
        "protocol",
        "native_protocol",
        "samples",
        "scored",
        "failed",
        "primary",
        "primary_lo",
        "primary_hi",
        *[f"metric:{k}" for k in metric_names],
    ]
    rows: list[list[Any]] = [header]
    for c, m in zip(results.cells, metrics, strict=True):
        lo, hi = ivs.get(c.key) or (None, None)
        rows.append(
            [
                c.model,
                c.task,
                c.dataset,
                c.condition,
                c.protocol,
                c.native_protocol,
                c.samples,
                c.scored,
                c.failed,
                c.primary,
                lo,
                hi,
                *[m.get(k) for k in metric_names],
            ]
        )
    return _write(rows)


def write_csvs(results: Results, out_dir: Path) -> list[Path]:
    """Write scorecard.csv and cells.csv into out_dir; returns their paths."""
    paths = [out_dir / "scorecard.csv", out_dir / "cells.csv"]
    atomic_write_text(paths[0], scorecard_csv(results))
    atomic_write_text(paths[1], cells_csv(results))
    return paths

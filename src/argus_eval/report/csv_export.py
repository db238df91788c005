"""scorecard.csv and cells.csv: the numbers of results.json as flat tables for spreadsheets."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from argus_eval.report.tables import scorecard_intervals
from argus_eval.report.validate import axes_of

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


def scorecard_csv(results: Mapping[str, Any]) -> str:
    """One row per model: each axis with its interval bounds and undefined reason, ranks and shift."""
    header: list[str] = ["model"]
    for axis in axes_of(results):
        header += [axis, f"{axis}_lo", f"{axis}_hi", f"{axis}_undefined_reason"]
    header += ["capability_rank", "overall_rank", "rank_shift"]
    rk = results.get("rankings") or {}
    cap = {r["model"]: r["rank"] for r in rk.get("capability", [])}
    ovr = {r["model"]: r["rank"] for r in rk.get("overall", [])}
    shift = (results.get("gap") or {}).get("rank_shift") or {}
    rows: list[list[Any]] = [header]
    for name, m in results["models"].items():
        row: list[Any] = [name]
        for axis in axes_of(results):
            iv = (m.get("intervals") or {}).get(axis) or [None, None]
            row += [m.get(axis), iv[0], iv[1], (m.get("undefined") or {}).get(axis)]
        row += [cap.get(name), ovr.get(name), shift.get(name)]
        rows.append(row)
    return _write(rows)


def cells_csv(results: Mapping[str, Any]) -> str:
    """One row per cell: key, protocol, counts, primary with interval, then every scalar metric."""
    metric_names = sorted(
        {
            k
            for c in results["cells"]
            for k, v in (c.get("metrics") or {}).items()
            if not isinstance(v, (dict, list))
        }
    )
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
    for c in results["cells"]:
        iv = ivs.get((c["model"], c["task"], c["dataset"], c["condition"])) or [None, None]
        metrics = c.get("metrics") or {}
        rows.append(
            [
                c["model"],
                c["task"],
                c["dataset"],
                c["condition"],
                c.get("protocol"),
                c.get("native_protocol"),
                c.get("samples"),
                c["scored"],
                c["failed"],
                c["primary"],
                iv[0],
                iv[1],
                *[metrics.get(k) for k in metric_names],
            ]
        )
    return _write(rows)


def write_csvs(results: Mapping[str, Any], out_dir: Path) -> list[Path]:
    """Write scorecard.csv and cells.csv into out_dir; returns their paths."""
    paths = [out_dir / "scorecard.csv", out_dir / "cells.csv"]
    paths[0].write_text(scorecard_csv(results), encoding="utf-8")
    paths[1].write_text(cells_csv(results), encoding="utf-8")
    return paths

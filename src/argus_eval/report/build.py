"""Write every report of a run directory from results.json and samples.jsonl only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from argus_eval.errors import ResultsError
from argus_eval.report.html import render_html
from argus_eval.report.markdown import render_summary


def read_results(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "results.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(f"{path} not found; run `argus run --out {run_dir}` first") from None
    except (OSError, ValueError) as e:
        raise ResultsError(f"{path} is not readable JSON ({e})") from None
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: top level must be an object")
    for key in ("schema", "models", "cells", "manifest"):
        if key not in data:
            raise ResultsError(
                f"{path}: missing field {key!r}; was it written by another ARGUS-EVAL version?"
            )
    if not str(data["schema"]).startswith("argus-eval/results/"):
        raise ResultsError(f"{path}: field 'schema' is {data['schema']!r}, not an ARGUS-EVAL results file")
    return data


def write_reports(run_dir: Path) -> None:
    """summary.md and report.html of a run (rebuilt from its files; never calls a model)."""
    results = read_results(run_dir)
    (run_dir / "summary.md").write_text(render_summary(results), encoding="utf-8")
    (run_dir / "report.html").write_text(render_html(results, run_dir / "samples.jsonl"), encoding="utf-8")

"""Write every report of a run directory from results.json and samples.jsonl only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from argus_eval.errors import ResultsError
from argus_eval.report.csv_export import write_csvs
from argus_eval.report.html import HtmlOptions, render_html
from argus_eval.report.markdown import render_summary
from argus_eval.report.validate import check_results


def read_results(run_dir: Path) -> dict[str, Any]:
    """The run's results.json, checked field by field (ResultsError names the bad field)."""
    path = run_dir / "results.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except FileNotFoundError:
        raise ResultsError(f"{path} not found; run `argus run --out {run_dir}` first") from None
    except (OSError, ValueError, RecursionError) as e:
        raise ResultsError(f"{path} is not readable JSON ({e})") from None
    _readable_schema(data, path)
    return check_results(data, path)


READS_SCHEMA = "argus-eval/results/1"


def _no_constant(name: str) -> Any:
    # ARGUS-EVAL writes with allow_nan=False: a NaN or Infinity means the file was edited or broken.
    raise ValueError(f"it holds {name}, which results.json never does (every number is finite or null)")


def _readable_schema(data: Any, path: Path) -> None:
    """ResultsError when results.json comes from another (e.g. newer) ARGUS-EVAL results schema."""
    schema = data.get("schema") if isinstance(data, dict) else None
    if isinstance(schema, str) and schema.startswith("argus-eval/results/") and schema != READS_SCHEMA:
        raise ResultsError(
            f"{path}: field 'schema' is {schema!r}; this ARGUS-EVAL reads {READS_SCHEMA!r}: "
            "use the ARGUS-EVAL version that wrote it, or rerun `argus run`"
        )


def write_reports(run_dir: Path, options: HtmlOptions | None = None) -> list[Path]:
    """summary.md, report.html, scorecard.csv and cells.csv of a run (rebuilt from its files; never
    calls a model). Returns the paths written."""
    results = read_results(run_dir)
    summary = run_dir / "summary.md"
    page = run_dir / "report.html"
    summary.write_text(render_summary(results), encoding="utf-8")
    page.write_text(render_html(results, run_dir / "samples.jsonl", options), encoding="utf-8")
    return [summary, page, *write_csvs(results, run_dir)]

"""`argus report DIR`: rebuild a run's reports from its files."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.text import Text


def report_command(run_dir: Path, console: Console) -> None:
    """Write summary.md, report.html, scorecard.csv and cells.csv from results.json and samples.jsonl."""
    from argus_eval.report.build import write_reports

    warnings: list[str] = []
    paths = write_reports(run_dir, warnings=warnings)
    for w in warnings:
        console.print(Text(f"warning: {w}"))
    console.print(Text("wrote " + ", ".join(str(p) for p in paths)))

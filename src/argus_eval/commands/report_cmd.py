"""`argus report DIR`: rebuild a run's reports from its files."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console


def report_command(run_dir: Path, console: Console) -> None:
    from argus_eval.report.build import write_reports

    write_reports(run_dir)
    console.print(f"wrote {run_dir}/summary.md and {run_dir}/report.html")

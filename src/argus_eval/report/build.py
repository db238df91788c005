"""Write every report of a run directory from results.json and samples.jsonl only."""

from __future__ import annotations

from pathlib import Path

from argus_eval.data.atomic import atomic_write_text
from argus_eval.report.csv_export import write_csvs
from argus_eval.report.gallery import select_worst
from argus_eval.report.html import HtmlOptions, render_html
from argus_eval.report.markdown import render_summary
from argus_eval.report.samples import iter_samples, samples_shortfall
from argus_eval.results_model import Results, load_results


def read_results(run_dir: Path) -> Results:
    """The run's results.json, loaded (and so validated) through the Results model; ResultsError names
    the file and the bad field."""
    return load_results(run_dir / "results.json")


def write_reports(
    run_dir: Path, options: HtmlOptions | None = None, warnings: list[str] | None = None
) -> list[Path]:
    """summary.md, report.html, scorecard.csv and cells.csv of a run (rebuilt from its files; never
    calls a model). Returns the paths written; what a reader must know about the files themselves
    (samples.jsonl cut short) is noted in both reports and appended to warnings."""
    results = read_results(run_dir)
    samples = run_dir / "samples.jsonl"
    opts = options or HtmlOptions()
    worst = select_worst(iter_samples(samples), opts.gallery_per_cell)  # the one pass over the file
    short = samples_shortfall(samples, results.cells, worst.lines)
    if short is not None:
        results = results.model_copy(update={"notes": [short, *results.notes]})
        if warnings is not None:
            warnings.append(short)
    summary = run_dir / "summary.md"
    page = run_dir / "report.html"
    atomic_write_text(summary, render_summary(results))
    atomic_write_text(page, render_html(results, samples, opts, worst))
    return [summary, page, *write_csvs(results, run_dir)]

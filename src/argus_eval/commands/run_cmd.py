"""`argus run`: run or resume an evaluation and print the scorecard."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from argus_eval.report.fmt import axis_text
from argus_eval.results_model import Results, results_json
from argus_eval.runner.config import RunSpec, load_config, parse_config


def scorecard_table(results: Results) -> Table:
    """The per-model scorecard as a rich table: every declared axis (values with 95 % intervals when
    bootstrapped)."""
    table = Table(title="ARGUS scorecard", show_lines=False)
    table.add_column("model")
    for axis in results.axis_names:
        table.add_column(axis, justify="right")
    for name, m in results.models.items():
        table.add_row(name, *[axis_text(m, a) for a in results.axis_names])
    return table


def run_command(
    cfg_path: Path,
    out: Path | None,
    *,
    strict: bool,
    as_json: bool,
    quiet: bool,
    console: Console,
    overrides: dict[str, Any] | None = None,
    retry_failed: bool = True,
) -> None:
    """Run or resume the configured evaluation into out (default runs/<name>) and print the scorecard."""
    cfg = configured(cfg_path, overrides)
    from argus_eval.report.build import write_reports
    from argus_eval.runner.outputs import writing
    from argus_eval.runner.pipeline import run

    out_dir = out or Path("runs") / cfg.name
    outcome = run(cfg, out_dir, strict=strict, quiet=quiet or as_json, retry_failed=retry_failed)
    with writing(out_dir / "report.html"):
        write_reports(out_dir)
    res = outcome.results
    if as_json:
        sys.stdout.write(
            json.dumps(
                {
                    "out_dir": str(out_dir),
                    "forward_calls": outcome.stats.forward_calls,
                    "recomputed_stale": outcome.stats.stale,
                    "retried_failed": outcome.stats.retried,
                    "answers_cut": outcome.stats.answers_cut,
                    "regions_padded": outcome.stats.regions_padded,
                    "left_out": outcome.plan.skipped,
                    "models": results_json(res)["models"],
                },
                indent=1,
                sort_keys=True,
            )
            + "\n"
        )
        return
    for note in res.notes:
        console.print(f"note: {note}", highlight=False, markup=False)
    for entry in outcome.plan.not_applicable:
        console.print(
            f"note: task {entry['task']} left out of dataset {entry['dataset']}: it has no samples for it",
            highlight=False,
            markup=False,
        )
    for s in outcome.plan.skipped:
        where = f" / {s['dataset']}" if "dataset" in s else ""
        console.print(
            f"left out: {s['model']} / {s['task']}{where}: {s['reason']}", markup=False, highlight=False
        )
    if outcome.stats.answers_cut:
        console.print(
            f"note: {outcome.stats.answers_cut} generated answers were longer than their model's "
            "max_answer_chars and were cut to it",
            markup=False,
            highlight=False,
        )
    if outcome.stats.regions_padded:
        console.print(
            f"note: on {outcome.stats.regions_padded} images the detector found fewer regions than asked; "
            "they were padded with empty regions that the model does not attend to",
            markup=False,
            highlight=False,
        )
    console.print(scorecard_table(res))
    gap = res.gap.sentence
    if gap:
        console.print(gap, highlight=False)
    failed = sum(c.failed for c in res.cells)
    console.print(
        f"model forward calls: {outcome.stats.forward_calls}   new records: {outcome.stats.records_written}"
        f"   recomputed (inputs changed): {outcome.stats.stale}   retried failures: {outcome.stats.retried}"
        f"   failed samples: {failed}   cells: {len(outcome.plan.cells)}"
    )
    console.print(
        f"wrote {out_dir}/results.json, samples.jsonl ({outcome.samples_written} lines), "
        f"summary.md, report.html"
    )


def configured(cfg_path: Path, overrides: dict[str, Any] | None) -> RunSpec:
    """The config file with command-line overrides applied (validated again as a whole)."""
    cfg = load_config(cfg_path)
    if not overrides:
        return cfg
    data = cfg.written.model_dump(mode="json")
    for key, value in overrides.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) else value
    return parse_config(data, str(cfg_path))


def dry_run_plan(
    cfg_path: Path, console: Console, as_json: bool, overrides: dict[str, Any] | None = None
) -> None:
    """Print the plan (cells, sample counts, protocol of each model on each task) without running a model."""
    from argus_eval.runner.dryrun import describe_plan

    rows, skipped, baselines = describe_plan(configured(cfg_path, overrides))
    if as_json:
        sys.stdout.write(
            json.dumps(
                {"cells": rows, "skipped": skipped, "blind_baselines": baselines}, indent=1, sort_keys=True
            )
            + "\n"
        )
        return
    table = Table(title=f"plan of {cfg_path}")
    # checkpoint: the spec serving the row (a composite model names a different one per task)
    cols = (
        "model",
        "task",
        "checkpoint",
        "dataset",
        "conditions",
        "samples",
        "protocol",
        "calls/cell",
        "calls",
    )
    regions = any(r["regions"] for r in rows)  # the region features a model reads (LXMERT)
    for col in (*cols, "regions") if regions else cols:
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["model"], r["task"], r["checkpoint"], r["dataset"], str(r["conditions"]), str(r["samples"]),
            r["protocol"], f"{r['calls_per_cell']:,}", f"{r['calls']:,}",
            *([r["regions"] or "-"] if regions else []),
        )  # fmt: skip
    console.print(table)
    for s in skipped:
        who = f"{s.get('model', '?')} / {s.get('task', '?')}"
        console.print(f"left out: {who}: {s['reason']}", markup=False, highlight=False)
    for b in baselines:
        console.print(
            f"blind baseline: {b['task']} / {b['dataset']}: {b['blind_baseline']}",
            markup=False,
            highlight=False,
        )

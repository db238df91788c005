"""`argus run`: run or resume an evaluation and print the scorecard."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from argus_eval.errors import ConfigError
from argus_eval.report.fmt import axis_text
from argus_eval.results_model import Results, results_json
from argus_eval.results_model.failures import NOT_RUN
from argus_eval.runner.config import RunSpec, parse_config, read_config_data
from argus_eval.runner.plan.dryrun_cost import RunCost
from argus_eval.runner.plan.harness_cost import HarnessEstimate, estimate_or_why

if TYPE_CHECKING:  # the runner's pipeline is imported when a run starts, not with the CLI
    from argus_eval.runner.pipeline import RunOutcome

# Exit status of a run that completed and wrote everything, but in which more than --max-failed of a
# model's samples failed or did not run (bad input and fatal errors exit 2).
EXIT_FAILED_SAMPLES = 1


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


def failure_lines(results: Results) -> list[str]:
    """What a person must see about failures: each model with failed samples and how many, each
    checkpoint that could not load with the reason and the cells it did not run, each incomplete pair.

    A load reason is stated on its "not loaded:" line and, in place of results.json's NOT_RUN pointer, on
    the model's "failed:" line, the one line per failing model that logs are searched for; the other
    lines point to it. Each is one line: a reason, name or checkpoint of several lines (a loader's message
    often is) is flattened, as results.json keeps it whole."""
    block = results.failures
    if block is None:
        return []
    loads: dict[str, list[str]] = {}
    for e in block.not_loaded:
        loads.setdefault(e.model, []).append(f"not run: {e.reason}")
    lines = []
    for m, f in block.with_failures().items():
        why = "; ".join([*(r for r in f.reasons if r != NOT_RUN), *loads.get(m, [])]) or "no reason recorded"
        lines.append(
            f"failed: {m}: {f.failed + f.not_run} of {f.samples} samples ({f.share:.1%}) failed or did not "
            f"run: {why}"
        )
    for e in block.not_loaded:
        lines.append(f"not loaded: {e.model} ({e.checkpoint}): {e.reason}")
    unrun: dict[tuple[str, str, str], list[int]] = {}
    for c in block.not_run:
        unrun.setdefault((c.model, c.task, c.dataset), []).append(c.samples)
    for (m, t, d), sizes in sorted(unrun.items()):
        lines.append(f"not run: {m} / {t} / {d}: {len(sizes)} cell(s), {sum(sizes)} samples")
    comp = results.comparison
    pairs = {tuple(i.models): i.reason for i in reversed(comp.incomplete)}  # capability's reason first
    for (a, b), why in sorted(pairs.items()):
        common = comp.common(a, b)
        on = "" if common is None else f"; compared on the {common.n} samples both scored"
        lines.append(f"incomplete: {a} and {b}: no claim either way ({why}){on}")
    return [" ".join(line.splitlines()) for line in lines]


def exit_status(results: Results, max_failed: float) -> tuple[int, str | None]:
    """EXIT_FAILED_SAMPLES and why when more than max_failed of any model's samples failed (a model
    that could not load counts as all its samples failed); else 0."""
    over = {} if results.failures is None else results.failures.over(max_failed)
    if not over:
        return 0, None
    names = ", ".join(f"{m} ({f.share:.1%})" for m, f in over.items())
    return EXIT_FAILED_SAMPLES, (
        f"more than --max-failed {max_failed:.1%} of a model's samples failed or did not run: {names}; "
        "every output was written"
    )


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
    max_failed: float = 0.0,
) -> int:
    """Run or resume the configured evaluation into out (default runs/<name>) and print the scorecard.

    Returns the exit status: EXIT_FAILED_SAMPLES when more than max_failed of a model's samples failed
    (everything is written all the same), else 0."""
    cfg = configured(cfg_path, overrides)
    from argus_eval.report.build import write_reports
    from argus_eval.runner.pipeline import run
    from argus_eval.runner.write.outputs import writing

    out_dir = out or Path("runs") / cfg.name

    def reports(out_dir: Path) -> None:
        with writing(out_dir / "report.html"):
            write_reports(out_dir)

    try:
        outcome = run(
            cfg, out_dir, strict=strict, quiet=quiet or as_json, retry_failed=retry_failed, reports=reports
        )
    except ConfigError as e:  # found while running (e.g. nothing could load): still the file's fault
        if str(cfg_path) in str(e):
            raise
        raise ConfigError(f"{cfg_path}: {e}") from e
    code, why = exit_status(outcome.results, max_failed)
    if as_json:
        sys.stdout.write(json.dumps(outcome_json(outcome, out_dir, code), indent=1, sort_keys=True) + "\n")
    else:
        print_outcome(console, outcome, out_dir)
        if why is not None:
            console.print(f"exit {code}: {why}", markup=False, highlight=False, soft_wrap=True)
    return code


def outcome_json(outcome: RunOutcome, out_dir: Path, code: int) -> dict[str, Any]:
    """`argus run --json`: the exit status, failures, counters and each model's row."""
    res, stats = results_json(outcome.results), outcome.stats
    return {
        "out_dir": str(out_dir),
        "exit_status": code,
        "failures": res.get("failures"),
        "forward_calls": stats.forward_calls,
        "recomputed_stale": stats.stale,
        "retried_failed": stats.retried,
        "answers_cut": stats.answers_cut,
        "regions_padded": stats.regions_padded,
        "left_out": outcome.plan.skipped,
        # annotation records the loaders skipped, each named in skipped.jsonl
        "skipped_records": sum(len(d.skipped) for d in outcome.plan.datasets),
        "models": res["models"],
    }


def note_lines(outcome: RunOutcome) -> list[str]:
    """The notes printed before the scorecard: results.json's, tasks without samples in a dataset, cells
    left out, answers cut and regions padded."""
    stats = outcome.stats
    lines = [f"note: {note}" for note in outcome.results.notes]
    for entry in outcome.plan.not_applicable:
        lines.append(
            f"note: task {entry['task']} left out of dataset {entry['dataset']}: it has no samples for it"
        )
    for s in outcome.plan.skipped:
        where = f" / {s['dataset']}" if "dataset" in s else ""
        lines.append(f"left out: {s['model']} / {s['task']}{where}: {s['reason']}")
    if stats.answers_cut:
        lines.append(
            f"note: {stats.answers_cut} generated answers were longer than their model's "
            "max_answer_chars and were cut to it"
        )
    if stats.regions_padded:
        lines.append(
            f"note: on {stats.regions_padded} images the detector found fewer regions than asked; "
            "they were padded with empty regions that the model does not attend to"
        )
    return lines


def print_outcome(console: Console, outcome: RunOutcome, out_dir: Path) -> None:
    """What `argus run` prints: notes, the scorecard, the gap sentence, counters, failures, the files."""
    res, stats = outcome.results, outcome.stats
    for line in note_lines(outcome):
        console.print(line, markup=False, highlight=False)
    console.print(scorecard_table(res))
    gap = res.gap.sentence
    if gap:
        console.print(gap, highlight=False)
    failed = sum(c.failed for c in res.cells)
    console.print(
        f"model forward calls: {stats.forward_calls}   new records: {stats.records_written}"
        f"   recomputed (inputs changed): {stats.stale}   retried failures: {stats.retried}"
        f"   failed samples: {failed}   cells: {len(outcome.plan.cells)}"
    )
    for line in failure_lines(res):  # one line each, never wrapped: logs are searched for them
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    console.print(
        f"wrote {out_dir}/results.json, samples.jsonl ({outcome.samples_written} lines), "
        f"summary.md, report.html"
    )


def run_overrides(
    data_root: str | Path | None,
    executor: str | None,
    address: str | None,
    workers: str | int | None = None,
) -> dict[str, Any]:
    """The config keys `argus run`'s options override (--data-root, --executor, --address, --workers);
    ConfigError naming --workers when it is not a whole number of at least 1."""
    overrides: dict[str, Any] = {}
    if workers is not None:
        try:
            count = int(workers)
        except ValueError:
            count = 0
        if count < 1:
            raise ConfigError(
                f"--workers {workers}: give a whole number of at least 1 (threads that prepare the next "
                "batches' images while the model runs), or leave it out for one per core"
            )
        overrides["workers"] = count
    if data_root is not None:
        overrides["data_root"] = str(data_root)
    if executor is not None:
        overrides["executor"] = executor
    if address is not None:
        overrides["executor_options"] = {"address": address}
    return overrides


def configured(cfg_path: Path, overrides: dict[str, Any] | None) -> RunSpec:
    """The config file with command-line overrides applied, then validated as a whole (so that an
    --executor override decides which options model reads executor_options)."""
    data = read_config_data(cfg_path)
    if overrides and isinstance(data, dict):
        for key, value in overrides.items():
            written = data.get(key)
            merge = isinstance(value, dict) and isinstance(written, dict)
            data[key] = {**(written or {}), **value} if merge else value
    return parse_config(data, str(cfg_path))


def cost_table(cost: RunCost) -> Table:
    """The run's cost, per model and in all, as the dry run prints it."""
    data = cost.to_json()
    table = Table(title="cost (counted, not timed: a dry run loads no model)")
    cols = ("records", "batches", "requests", "judged")
    for col in ("model", *cols):
        table.add_column(col, justify="left" if col == "model" else "right")
    for name, row in data["models"].items():
        table.add_row(name, *(f"{row[c]:,}" for c in cols))
    total = data["total"]
    table.add_row("all", *(f"{total[c]:,}" for c in cols), end_section=True)
    table.caption = (
        f"corruptions {total['corruptions']:,}, once per image, condition and seed for every model, and "
        f"region extractions {total['region_extractions']:,}, once per image a model reading regions is "
        "shown (batches: a local model's batches of samples, each one or more forward calls, e.g. an "
        "image pass and a text pass, which the run line's 'model forward calls' counts; requests: a served "
        "model's; judged: answers sent to a judge)"
    )
    return table


def duration(seconds: float) -> str:
    """Seconds as a person reads them: seconds up to 90, then minutes up to 90, then hours (so that a
    run as small as bench_scale's reads as more than "0.0 min")."""
    if seconds < 90:
        return f"{seconds:.1f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def estimate_line(found: HarnessEstimate | str) -> str:
    """The dry run's time estimate, marked as one, with how it was made (or why there is none)."""
    if isinstance(found, str):
        return f"estimate of the harness time: {found}"
    left = ""
    if found.uncovered:
        tasks = ", ".join(f"{t} ({n:,} records)" for t, n in found.uncovered.items())
        left = f"; not covered (no cost per record measured, so not counted): {tasks}"
    if found.uncovered_corruptions:
        n = found.uncovered_corruptions
        left += f"; not covered: {n:,} corruptions (no cost per corruption measured)"
    return (
        f"estimate (harness only, this machine): {duration(found.seconds)}, the planned records and "
        f"corruptions times the harness cost of each that {found.how} measured; each model's forward "
        f"time comes on top (`argus profile` measures it){left}"
    )


def dry_run_plan(
    cfg_path: Path, console: Console, as_json: bool, overrides: dict[str, Any] | None = None
) -> None:
    """Print the plan (cells, sample counts, protocol of each model on each task) without running a model."""
    from argus_eval.runner.plan.dryrun import describe_plan

    rows, skipped, baselines, cost = describe_plan(configured(cfg_path, overrides))
    # the estimate, or why there is none naming the file and the fix (the counts are printed all the same)
    found = estimate_or_why(cost.records_by_task, corruptions=cost.corruptions)
    made = None if isinstance(found, str) else found
    if as_json:
        priced = {
            **cost.to_json(),
            "estimate": None if made is None else made.to_json(),
            "no_estimate": found if isinstance(found, str) else None,
        }
        out = {"cells": rows, "skipped": skipped, "blind_baselines": baselines, "cost": priced}
        sys.stdout.write(json.dumps(out, indent=1, sort_keys=True) + "\n")
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
    console.print(cost_table(cost))
    console.print(estimate_line(found), markup=False, highlight=False, soft_wrap=True)
    for s in skipped:
        who = f"{s.get('model', '?')} / {s.get('task', '?')}"
        console.print(f"left out: {who}: {s['reason']}", markup=False, highlight=False)
    for b in baselines:
        console.print(
            f"blind baseline: {b['task']} / {b['dataset']}: {b['blind_baseline']}",
            markup=False,
            highlight=False,
        )

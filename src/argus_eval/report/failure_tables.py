"""Tables of what failed: per model, samples failed or not run (and why), the checkpoints that could not
load (and why) and their cells. Built from the run's Results only, shared by summary.md and report.html."""

from __future__ import annotations

from argus_eval.report.tables import Table, TCell
from argus_eval.results_model import Results


def _t(text: object) -> TCell:
    return TCell(str(text))


def failures(results: Results) -> Table:
    """Every model's samples: asked, scored, failed, not run, the share and a few reasons."""
    block = results.failures
    t = Table(
        "failures",
        "Failed samples",
        ["model", "samples", "scored", "failed", "not run", "share", "reasons"],
        caption="A model's own figures use only the samples it scored; a comparison of two models uses the "
        "samples both scored, and claims none when either did not complete a shared cell. A model that "
        "could not load counts as all its samples failed."
        + ("" if block is not None else " (This results.json records no failure counts.)"),
    )
    for name, f in ({} if block is None else block.models).items():
        t.rows.append(
            [
                _t(name),
                _t(f.samples),
                _t(f.scored),
                _t(f.failed),
                _t(f.not_run),
                _t(f"{f.share:.1%}"),
                _t("; ".join(f.reasons) or "-"),
            ]
        )
    return t


def not_loaded(results: Results) -> Table:
    """The checkpoints that could not load, each with the loader's reason: the one place a page states it
    (the model's other rows and notes point here)."""
    t = Table(
        "not-loaded",
        "Not loaded",
        ["model", "checkpoint", "reason"],
        caption="Each checkpoint that could not load, with the loader's reason; the run went on without it.",
    )
    for e in [] if results.failures is None else results.failures.not_loaded:
        t.rows.append([_t(e.model), _t(e.checkpoint), _t(e.reason)])
    return t


def not_run(results: Results) -> Table:
    """The cells of checkpoints that could not load (why: the Not loaded table)."""
    t = Table(
        "not-run",
        "Cells not run (the model could not load)",
        ["model", "task", "dataset", "condition", "samples"],
    )
    for c in [] if results.failures is None else results.failures.not_run:
        t.rows.append([_t(c.model), _t(c.task), _t(c.dataset), _t(c.condition), _t(c.samples)])
    return t


def failure_tables(results: Results) -> list[Table]:
    """The failure tables in report order."""
    return [failures(results), not_loaded(results), not_run(results)]

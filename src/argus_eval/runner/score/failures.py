"""What failed in a run, per model: the failures block of results.json and the scoring inputs that keep
one model's failures out of another's figures (what each cell asked, which models ran nothing)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from argus_eval.results_model.failures import (
    BASIS,
    COULD_NOT_LOAD,
    NOT_RUN,
    SEE_NOT_LOADED,
    Failures,
    ModelFailures,
    NotLoaded,
    NotRunCell,
)
from argus_eval.runner.plan.cell_keys import cell_key, key_of
from argus_eval.runner.score.score import ScoredCell
from argus_eval.scoring.types import CellKey

MAX_REASONS = 3


def planned_samples(scored: Sequence[ScoredCell], not_run: Sequence[dict[str, Any]]) -> dict[CellKey, int]:
    """Samples every cell asked: the plan's cells (whether or not any sample was scored) and the cells of
    checkpoints that could not load (none scored)."""
    out = {key_of(s.cell): len(s.cell.samples) for s in scored}
    for c in not_run:
        out.setdefault(cell_key(c["model"], c["task"], c["dataset"], c["condition"]), int(c["samples"]))
    return out


def unavailable_models(scored: Sequence[ScoredCell], not_loaded: Sequence[dict[str, str]]) -> dict[str, str]:
    """Models that ran no cell because they could not load, and why: COULD_NOT_LOAD, which points to
    the reason in failures.not_loaded (each axis and pair of the model would quote it)."""
    ran = {s.cell.model.name for s in scored}
    return {e["model"]: COULD_NOT_LOAD for e in not_loaded if e["model"] not in ran}


def failures_block(
    scored: Sequence[ScoredCell], not_loaded: Sequence[dict[str, str]], not_run: Sequence[dict[str, Any]]
) -> Failures:
    """Per model: samples asked, scored, failed, not run, and the share failed or not run; a model that
    could not load counts as all its samples failed. Only not_loaded's entries state why a checkpoint
    could not load: its unrun cells and its reasons say NOT_RUN / COULD_NOT_LOAD, pointing there."""
    tally: dict[str, dict[str, int]] = {}
    reasons: dict[str, set[str]] = {}
    for s in scored:
        t = tally.setdefault(s.cell.model.name, {"samples": 0, "scored": 0, "not_run": 0})
        t["samples"] += len(s.cell.samples)
        t["scored"] += 0 if s.result is None else len(s.result.sample_ids)
        reasons.setdefault(s.cell.model.name, set()).update(s.failures.values())
    for c in not_run:  # every unrun cell is a checkpoint's that could not load (plan.not_run)
        t = tally.setdefault(c["model"], {"samples": 0, "scored": 0, "not_run": 0})
        t["samples"] += int(c["samples"])
        t["not_run"] += int(c["samples"])
    unrun = {c["model"] for c in not_run} | {e["model"] for e in not_loaded}
    for m in unrun:  # a checkpoint whose tasks select no sample still failed to load
        tally.setdefault(m, {"samples": 0, "scored": 0, "not_run": 0})
    models = {}
    for m, t in sorted(tally.items()):
        failed = t["samples"] - t["scored"] - t["not_run"]
        share = (failed + t["not_run"]) / t["samples"] if t["samples"] else (1.0 if m in unrun else 0.0)
        why = sorted(reasons.get(m, set()))[:MAX_REASONS] + ([NOT_RUN] if m in unrun else [])
        models[m] = ModelFailures(
            samples=t["samples"], scored=t["scored"], failed=failed, not_run=t["not_run"], share=share,
            reasons=why,
        )  # fmt: skip
    return Failures(
        basis=BASIS,
        models=models,
        not_loaded=[NotLoaded(**e) for e in not_loaded],
        not_run=[NotRunCell(**{**c, "reason": COULD_NOT_LOAD}) for c in not_run],
    )


def failure_notes(block: Failures) -> list[str]:
    """One note per model with failed or unrun samples, and per checkpoint that could not load (pointing
    to its not_loaded entry for why)."""
    notes = [
        f"{e.model}: could not load {e.checkpoint} ({SEE_NOT_LOADED}); its "
        f"{sum(1 for c in block.not_run if c.model == e.model)} cell(s) are not run"
        for e in block.not_loaded
    ]
    for m, f in block.with_failures().items():
        lost = f.failed + f.not_run
        notes.append(
            f"{m}: {lost} of {f.samples} samples failed or did not run ({f.share:.1%}); its own figures use "
            f"its {f.scored} scored samples, and comparisons with it the samples both models scored"
        )
    return notes

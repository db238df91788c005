"""What failed in a run, per model: the failures block of results.json and the scoring inputs that keep
one model's failures out of another's figures (what each cell asked, which models ran nothing)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from argus_eval.results_model.failures import BASIS, Failures, ModelFailures, NotLoaded, NotRunCell
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
    """Models that ran no cell because they could not load, and why."""
    ran = {s.cell.model.name for s in scored}
    out: dict[str, str] = {}
    for e in not_loaded:
        if e["model"] not in ran:
            why = f"could not load ({e['reason']})"
            out[e["model"]] = why if e["model"] not in out else out[e["model"]] + "; " + why
    return out


def failures_block(
    scored: Sequence[ScoredCell], not_loaded: Sequence[dict[str, str]], not_run: Sequence[dict[str, Any]]
) -> Failures:
    """Per model: samples asked, scored, failed, not run, and the share failed or not run; a model that
    could not load counts as all its samples failed."""
    tally: dict[str, dict[str, int]] = {}
    reasons: dict[str, set[str]] = {}
    for s in scored:
        t = tally.setdefault(s.cell.model.name, {"samples": 0, "scored": 0, "not_run": 0})
        t["samples"] += len(s.cell.samples)
        t["scored"] += 0 if s.result is None else len(s.result.sample_ids)
        reasons.setdefault(s.cell.model.name, set()).update(s.failures.values())
    unrun: dict[str, set[str]] = {}
    for c in not_run:
        t = tally.setdefault(c["model"], {"samples": 0, "scored": 0, "not_run": 0})
        t["samples"] += int(c["samples"])
        t["not_run"] += int(c["samples"])
        unrun.setdefault(c["model"], set()).add(f"not run: {c['reason']}")
    for e in not_loaded:  # a checkpoint whose tasks select no sample still failed to load
        tally.setdefault(e["model"], {"samples": 0, "scored": 0, "not_run": 0})
        unrun.setdefault(e["model"], set()).add(f"not run: {e['reason']}")
    models = {}
    for m, t in sorted(tally.items()):
        failed = t["samples"] - t["scored"] - t["not_run"]
        share = (failed + t["not_run"]) / t["samples"] if t["samples"] else (1.0 if m in unrun else 0.0)
        why = sorted(reasons.get(m, set()))[:MAX_REASONS] + sorted(unrun.get(m, set()))[:MAX_REASONS]
        models[m] = ModelFailures(
            samples=t["samples"], scored=t["scored"], failed=failed, not_run=t["not_run"], share=share,
            reasons=why,
        )  # fmt: skip
    return Failures(
        basis=BASIS,
        models=models,
        not_loaded=[NotLoaded(**e) for e in not_loaded],
        not_run=[NotRunCell(**c) for c in not_run],
    )


def failure_notes(block: Failures) -> list[str]:
    """One note per model with failed or unrun samples, and per checkpoint that could not load."""
    notes = [
        f"{e.model}: could not load {e.checkpoint} ({e.reason}); its "
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

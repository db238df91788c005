"""results.json: scorecard (axes, intervals, rankings, gap), per-cell metrics, efficiency, manifest."""

from __future__ import annotations

from typing import Any

from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.runner.config import RunConfig
from argus_eval.runner.score import ScoredCell, cell_data, cell_summary
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.scorecard import bootstrap_scorecard


def build_results(
    scored: list[ScoredCell],
    profiles: dict[str, EfficiencyProfile | None],
    cfg: RunConfig,
    manifest: dict[str, Any],
) -> dict[str, Any]:
    """Everything a report needs, as plain JSON with deterministic content for the same inputs."""
    options = ScoringOptions.model_validate(cfg.scoring)
    card = bootstrap_scorecard(cell_data(scored), profiles, options).to_json()
    notes = []
    for s in manifest.get("skipped", []):
        notes.append(f"{s.get('model', '?')} / {s.get('task', '?')}: left out ({s['reason']})")
    failed = sum(len(s.failures) for s in scored)
    if failed:
        notes.append(f"{failed} sample(s) failed and are excluded from scores (see cells[].failure_reasons)")
    return {
        "models": card["models"],
        "rankings": card["rankings"],
        "gap": card["gap"],
        "scorecard_cells": card["cells"],
        "bootstrap": card["bootstrap"],
        "scoring_options": card["options"],
        "cells": [cell_summary(s) for s in scored],
        "efficiency": {name: (None if p is None else p.to_json()) for name, p in sorted(profiles.items())},
        "manifest": manifest,
        "notes": notes,
    }

"""results.json: scorecard (axes, intervals, rankings, gap), per-cell metrics, efficiency, manifest."""

from __future__ import annotations

from typing import Any

from argus_eval.efficiency.devices import DEVICES, get_device, project
from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.runner.config import RunConfig
from argus_eval.runner.score import ScoredCell, cell_data, cell_summary
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.reliance import NOTES as RELIANCE_NOTES
from argus_eval.scoring.reliance import image_reliance, is_control
from argus_eval.scoring.scorecard import bootstrap_scorecard
from argus_eval.scoring.types import CellKey


def _key(s: ScoredCell) -> CellKey:
    c = s.cell
    return CellKey(c.model.name, c.task.name, c.dataset.name, c.condition.id)


def reliance_block(scored: list[ScoredCell], options: ScoringOptions) -> dict[str, Any]:
    """The "reliance" block: per model, clean minus control scores with paired intervals, the share of
    unchanged predictions, and the task's blind baseline (when it reports one) beside them."""
    skipped = {
        _key(s): (sorted(set(s.failures.values())) or ["no sample succeeded"])[0]
        for s in scored
        if s.result is None and is_control(s.cell.condition.id)
    }
    models = image_reliance(
        cell_data(scored),
        resamples=options.resamples,
        seed=options.seed,
        confidence=options.confidence,
        skipped=skipped,
    )
    blind = {
        (k.model, k.task, k.dataset): s.result.breakdown["blind_baseline"]
        for s in scored
        if (k := _key(s)).is_clean and s.result is not None and "blind_baseline" in s.result.breakdown
    }
    for model, entries in models.items():
        for e in entries:
            b = blind.get((model, e["task"], e["dataset"]))
            if b is not None:
                e["blind_baseline"] = b
    return {
        "scoring": options.reliance,
        "models": models,
        "skipped": [
            f"{k.model} / {k.task} / {k.dataset}: {k.condition} skipped ({reason})"
            for k, reason in sorted(skipped.items())
        ],
        "notes": list(RELIANCE_NOTES),
    }


_NOMINAL = {"cpu-2core"}  # an assumed machine, not a vendor spec sheet: no projection onto it
_BYTES_PER_PARAM = {"float32": 4, "bfloat16": 2, "float16": 2}


def projections(profile: EfficiencyProfile) -> list[dict[str, object]]:
    """Roofline projections of a measured profile onto the catalogued devices: estimates, never in E."""
    dtype = str(profile.fingerprint.get("dtype", "float32"))
    if profile.params is None:
        return []
    weights = profile.params * _BYTES_PER_PARAM.get(dtype, 4)
    out = []
    for name in DEVICES.names():
        if name in _NOMINAL:
            continue
        if dtype in get_device(name).peak_flops:
            out.append(project(profile, weights, name, dtype))
    return out


def build_results(
    scored: list[ScoredCell],
    profiles: dict[str, EfficiencyProfile | None],
    cfg: RunConfig,
    manifest: dict[str, Any],
) -> dict[str, Any]:
    """Everything a report needs, as plain JSON with deterministic content for the same inputs."""
    options = ScoringOptions.model_validate(cfg.scoring)
    card = bootstrap_scorecard(cell_data(scored), profiles, options).to_json()
    reliance = reliance_block(scored, options)
    notes = []
    for s in manifest.get("skipped", []):
        notes.append(f"{s.get('model', '?')} / {s.get('task', '?')}: left out ({s['reason']})")
    notes += reliance["skipped"]
    failed = sum(len(s.failures) for s in scored)
    if failed:
        notes.append(f"{failed} sample(s) failed and are excluded from scores (see cells[].failure_reasons)")
    efficiency = {name: (None if p is None else p.to_json()) for name, p in sorted(profiles.items())}
    for name, p in profiles.items():
        if p is not None:
            proj = projections(p)
            efficiency[name]["projections"] = proj  # type: ignore[index]
            if card["models"].get(name, {}).get("efficiency"):
                card["models"][name]["efficiency"]["projections"] = proj
    return {
        "models": card["models"],
        "rankings": card["rankings"],
        "gap": card["gap"],
        "scorecard_cells": card["cells"],
        "bootstrap": card["bootstrap"],
        "scoring_options": card["options"],
        "reliance": reliance,
        "cells": [cell_summary(s) for s in scored],
        "efficiency": efficiency,
        "manifest": manifest,
        "notes": notes,
    }

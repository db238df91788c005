"""results.json: scorecard (axes, intervals, rankings, gap), per-cell metrics, efficiency, manifest."""

from __future__ import annotations

from typing import Any

from argus_eval.efficiency.devices import DEVICES, get_device, project
from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.efficiency.trials import summary_spread
from argus_eval.runner.config import RunSpec
from argus_eval.runner.profiling import Profiles
from argus_eval.runner.score import ScoredCell, cell_data, cell_summary
from argus_eval.scoring.extras import add_extra_scores
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


# A median relative latency spread across trials above this makes E's ranking fragile: say so.
NOISY_SPREAD = 0.5


def timing_block(prof: Profiles, cfg: RunSpec) -> dict[str, Any]:
    """The run's timing trials, their noise, and what was left out of E and why."""
    timings = list(prof.timings.values())
    noise = summary_spread(timings)
    warning = None
    if noise is not None and noise > NOISY_SPREAD:
        warning = (
            f"timing is noisy on this machine (median latency spread across trials {noise:.0%}): "
            "E's intervals are wide; more trials (efficiency.trials) or a quieter machine narrow them"
        )
    return {
        "trials_per_task": cfg.efficiency.trials,
        "interleaved": True,
        "noise": {"median_latency_spread": noise, "basis": "(max - min) / median of trial latencies"},
        "warning": warning,
        "failed_trials": prof.failed_trials,
        "undefined": dict(sorted(prof.undefined.items())),
        "left_out": [{"model": m, "task": t, "reason": r} for (m, t), r in sorted(prof.left_out.items())],
        "per_task": [t.to_json() for _k, t in sorted(prof.timings.items())],
    }


def build_results(
    scored: list[ScoredCell],
    prof: Profiles,
    cfg: RunSpec,
    manifest: dict[str, Any],
) -> dict[str, Any]:
    """Everything a report needs, as plain JSON with deterministic content for the same inputs."""
    options = cfg.scoring
    profiles = prof.summaries
    timings = prof.timings if cfg.efficiency.enabled else None
    why_no_e = {m: f"{t}: {r}" for (m, t), r in sorted(prof.left_out.items())}
    why_no_e.update(prof.undefined)
    card = bootstrap_scorecard(cell_data(scored), profiles, options, timings, why_no_e).to_json()
    # A cell's further official scores (VCR: QA->R, Q->AR) beside its primary, on the same paired resamples.
    extras = {_key(s): s.result.extras for s in scored if s.result is not None and s.result.extras}
    add_extra_scores(card["cells"], cell_data(scored), extras, options)
    reliance = reliance_block(scored, options)
    notes = []
    for s in manifest.get("skipped", []):
        notes.append(f"{s.get('model', '?')} / {s.get('task', '?')}: left out ({s['reason']})")
    notes += reliance["skipped"]
    timing = timing_block(prof, cfg) if cfg.efficiency.enabled else None
    if timing is not None and timing["warning"]:
        notes.append(timing["warning"])
    if timing is not None and prof.failed_trials:
        notes.append(f"{prof.failed_trials} timing trial(s) failed twice and were left out of E")
    for m, why in sorted(prof.undefined.items()):
        notes.append(f"{m}: no efficiency figures ({why})")
    if card["below_chance"]:
        listed = ", ".join(
            f"{c['model']} / {c['task']} / {c['dataset']} ({c['score']:.3f} <= chance {c['chance']:.3f})"
            for c in card["below_chance"]
        )
        notes.append(f"at or below chance, counted in P but not in CDC: {listed}")
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
        "axes": card["axes"],
        "models": card["models"],
        "rankings": card["rankings"],
        "gap": card["gap"],
        "comparison": card["comparison"],
        "below_chance": card["below_chance"],
        "timing": timing,
        "scorecard_cells": card["cells"],
        "bootstrap": card["bootstrap"],
        "scoring_options": card["options"],
        "reliance": reliance,
        "cells": [cell_summary(s) for s in scored],
        "efficiency": efficiency,
        "manifest": manifest,
        "notes": notes,
    }

"""results.json: the Results model built from the scored cells, the timing trials and the manifest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from argus_eval.efficiency.devices import projected_devices
from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.efficiency.roofline import project
from argus_eval.efficiency.trials import summary_spread
from argus_eval.efficiency.work import DTYPE_BYTES
from argus_eval.results_model import SCHEMA, Results
from argus_eval.results_model.cells import CellSummary
from argus_eval.results_model.efficiency import (
    LeftOut,
    Projection,
    TaskTimingBlock,
    Timing,
    TimingNoise,
    TimingStop,
)
from argus_eval.results_model.failures import Failures
from argus_eval.results_model.judges import Judge
from argus_eval.results_model.manifest import Manifest
from argus_eval.results_model.reliance import BlindBaseline, Reliance
from argus_eval.results_model.scorecard import ScorecardPart
from argus_eval.runner.plan.cell_keys import key_of
from argus_eval.runner.score.failures import (
    failure_notes,
    failures_block,
    planned_samples,
    unavailable_models,
)
from argus_eval.runner.score.score import ScoredCell, cell_data, cell_summary
from argus_eval.runner.timing.profiling import Profiles
from argus_eval.scoring.extras import extra_scores
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.reliance import NOTES as RELIANCE_NOTES
from argus_eval.scoring.reliance import image_reliance
from argus_eval.scoring.results_blocks import efficiency_block
from argus_eval.scoring.scorecard import bootstrap_scorecard


def reliance_block(scored: list[ScoredCell], options: ScoringOptions) -> Reliance:
    """Per model, clean minus control scores with paired intervals, the share of unchanged predictions,
    and the task's blind baseline (when it reports one) beside them."""
    skipped = {
        key_of(s.cell): (sorted(set(s.failures.values())) or ["no sample succeeded"])[0]
        for s in scored
        if s.result is None and key_of(s.cell).is_control
    }
    blind = {
        (k.model, k.task, k.dataset): BlindBaseline(**s.result.breakdown["blind_baseline"])
        for s in scored
        if (k := key_of(s.cell)).is_clean and s.result is not None and "blind_baseline" in s.result.breakdown
    }
    models = image_reliance(
        cell_data(scored),
        resamples=options.resamples,
        seed=options.seed,
        confidence=options.confidence,
        skipped=skipped,
        blind=blind,
    )
    return Reliance(
        scoring=options.reliance,
        models=models,
        skipped=[
            f"{k.model} / {k.task} / {k.dataset}: {k.condition} skipped ({reason})"
            for k, reason in sorted(skipped.items())
        ],
        notes=list(RELIANCE_NOTES),
    )


def projections(profile: EfficiencyProfile) -> list[Projection]:
    """Roofline projections of a measured profile onto every catalogued device: estimates, never in E.
    A dtype a device has no peak for is projected at the nearest one it has, and says so."""
    dtype = str(profile.fingerprint.get("dtype", "float32"))
    if profile.params is None:
        return []
    weights = profile.params * DTYPE_BYTES[dtype]
    return [Projection.model_validate(project(profile, weights, name, dtype)) for name in projected_devices()]


# A median relative latency spread across trials above this makes E's ranking fragile: say so.
NOISY_SPREAD = 0.5


def timing_block(prof: Profiles, trials_per_task: int) -> Timing:
    """The run's timing trials, their noise, and what was left out of E and why."""
    timings = list(prof.timings.values())
    noise = summary_spread(timings)
    warning = None
    if noise is not None and noise > NOISY_SPREAD:
        warning = (
            f"timing is noisy on this machine (median latency spread across trials {noise:.0%}): "
            "E's intervals are wide; more trials (efficiency.trials) or a quieter machine narrow them"
        )
    return Timing(
        trials_per_task=trials_per_task,
        interleaved=True,
        noise=TimingNoise(median_latency_spread=noise, basis="(max - min) / median of trial latencies"),
        warning=warning,
        failed_trials=prof.failed_trials,
        undefined=dict(sorted(prof.undefined.items())),
        left_out=[LeftOut(model=m, task=t, reason=r) for (m, t), r in sorted(prof.left_out.items())],
        per_task=[TaskTimingBlock(**t.to_json()) for _k, t in sorted(prof.timings.items())],
        stopping=None if prof.stop is None else TimingStop.model_validate(prof.stop.to_json()),
    )


def _notes(
    scored: list[ScoredCell],
    failures: Failures,
    prof: Profiles,
    manifest: Manifest,
    card: ScorecardPart,
    reliance: Reliance,
    timing: Timing | None,
) -> list[str]:
    notes = [f"{s.model} / {s.task}: left out ({s.reason})" for s in manifest.skipped]
    notes += reliance.skipped
    if timing is not None and timing.warning:
        notes.append(timing.warning)
    if timing is not None and prof.failed_trials:
        notes.append(f"{prof.failed_trials} timing trial(s) failed twice and were left out of E")
    for m, why in sorted(prof.undefined.items()):
        notes.append(f"{m}: no efficiency figures ({why})")
    if card.below_chance:
        listed = ", ".join(
            f"{c.model} / {c.task} / {c.dataset} ({c.score:.3f} <= chance {c.chance:.3f})"
            for c in card.below_chance
        )
        notes.append(f"at or below chance, counted in P but not in CDC: {listed}")
    notes += _cleaned_notes(scored)
    failed = sum(f.failed for f in failures.models.values())
    if failed:
        notes.append(f"{failed} sample(s) failed and are excluded from scores (see cells[].failure_reasons)")
    notes += failure_notes(failures)
    pairs = {tuple(i.models): i.reason for i in reversed(card.comparison.incomplete)}  # capability first
    notes += [
        f"{a} and {b}: incomplete, no claim either way ({why})" for (a, b), why in sorted(pairs.items())
    ]
    notes += [f"no claim about {' and '.join(w.models)}: {w.reason}" for w in card.comparison.withheld]
    return notes


def _cleaned_notes(scored: list[ScoredCell]) -> list[str]:
    """Generated answers that held chat-template tokens, per model."""
    cleaned: dict[str, int] = {}
    for s in scored:
        form = None if s.result is None else s.result.answer_format
        if form is not None and any(form.cleaned):
            name = s.cell.model.name
            cleaned[name] = cleaned.get(name, 0) + sum(1 for n in form.cleaned if n)
    return [
        f"{m}: {n} generated answer(s) held chat-template tokens, removed (tasks/answers.py; "
        "cells[].template_cleaned, samples.jsonl template_cleaned)"
        for m, n in sorted(cleaned.items())
    ]


def build_results(
    scored: list[ScoredCell],
    prof: Profiles,
    options: ScoringOptions,
    timing: Timing | None,
    manifest: Mapping[str, Any],
    not_loaded: Sequence[dict[str, str]] = (),
    not_run: Sequence[dict[str, Any]] = (),
    input_notes: Sequence[str] = (),
    judges: Sequence[Judge] = (),
) -> Results:
    """Everything a report needs, with deterministic content for the same inputs. timing: the timing
    block when the run timed its models (None without efficiency); manifest: what ran, on what;
    not_loaded, not_run: the checkpoints that could not load and the cells they did not run;
    input_notes: what the loaders said about the inputs (skipped records), first among the notes."""
    profiles = prof.summaries
    why_no_e = {m: f"{t}: {r}" for (m, t), r in sorted(prof.left_out.items())}
    why_no_e.update(prof.undefined)
    cells = cell_data(scored)
    proj = {name: projections(p) for name, p in profiles.items() if p is not None}
    # A cell's further official scores (VCR: QA->R, Q->AR) beside its primary, on the same paired resamples.
    extras = {key_of(s.cell): s.result.extras for s in scored if s.result is not None and s.result.extras}
    card = bootstrap_scorecard(
        cells,
        profiles,
        options,
        prof.timings if timing is not None else None,
        why_no_e,
        planned=planned_samples(scored, not_run),
        unavailable=unavailable_models(scored, not_loaded),
        projections=proj,
        extras=extra_scores(cells, extras, options) if extras else None,
    )
    failures = failures_block(scored, not_loaded, not_run)
    man = Manifest.model_validate(manifest)
    reliance = reliance_block(scored, options)
    judged: dict[str, Any] = {"judges": list(judges)} if judges else {}  # no judge: no key, as before
    return Results(
        schema=SCHEMA,
        **dict(card),
        timing=timing,
        reliance=reliance,
        cells=[CellSummary(**cell_summary(s)) for s in scored],
        efficiency={
            name: None if p is None else efficiency_block(p, proj[name])
            for name, p in sorted(profiles.items())
        },
        manifest=man,
        notes=[*input_notes, *_notes(scored, failures, prof, man, card, reliance, timing)],
        failures=failures,
        **judged,
    )

"""Image reliance: how much a model's score depends on seeing the right image.

For each model, task and dataset with control cells ("control:swap@1", "control:blank@1"):
reliance = clean score - control score, on the samples the model scored in all its cells there, with a
paired bootstrap interval (the very resamples the scorecard draws for them: same seed, same counts),
and the share of predictions that stay the same under the control. A model that ignores its image
has reliance 0 and keeps every prediction; one that reads the answer off the image loses about its
whole clean score above chance.

Controls are not perturbations: they never enter RR (a cell's role says which it is: CellKey.is_control,
set from the condition's kind; scoring/engine.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from argus_eval.results_model.reliance import BlindBaseline, Control, RelianceEntry
from argus_eval.scoring.paired import Group, align, group_rows, paired_counts
from argus_eval.scoring.statistics import percentile_interval
from argus_eval.scoring.types import CellData, CellKey, FloatArray

TaskCell = tuple[str, str, str]  # (model, task, dataset)

NOTES = (
    "reliance = clean score - control score on the sample ids the model scored in every one of its "
    "cells of the (task, dataset); intervals are percentile intervals over the scorecard's own paired "
    "resamples",
    "same_prediction = share of samples whose prediction under the control equals the clean one",
    "controls are not perturbations: they are left out of RR and of the severity curves",
)


def _point(rows: FloatArray | None) -> float | None:
    if rows is None or rows[0] != rows[0]:  # NaN check without importing numpy for one comparison
        return None
    return float(rows[0])


def _control(
    key: CellKey,
    clean: FloatArray,
    control: FloatArray,
    flip: FloatArray | None,
    confidence: float,
) -> Control:
    diff = clean - control
    same = None if flip is None else 1.0 - flip
    return Control(
        condition=key.condition,
        score=_point(control),
        reliance=_point(diff),
        interval=percentile_interval(diff, confidence),
        same_prediction=_point(same),
        same_prediction_interval=percentile_interval(same, confidence),
    )


def _group_entries(
    group: Group,
    resamples: int,
    seed: int,
    confidence: float,
    blind: Mapping[TaskCell, BlindBaseline],
    named: Mapping[TaskCell, Mapping[str, Control]],
) -> dict[str, RelianceEntry]:
    """model -> reliance entry of this (task, dataset), for models with at least one control cell."""
    keys = [a.cell.key for a in group.cells]
    models = sorted({k.model for k in keys if k.is_control})
    if not models:
        return {}
    scores, flips = group_rows(group, paired_counts(group, resamples, seed))
    out: dict[str, RelianceEntry] = {}
    for model in models:
        mine = sorted(k for k in keys if k.model == model and k.is_control)
        clean = scores.get(mine[0].clean_key())
        where = (model, group.task, group.dataset)
        controls: dict[str, Control] = {}
        for k in mine:
            controls[k.ref.name] = (
                Control(condition=k.condition, skipped="no clean cell to compare with")
                if clean is None
                else _control(k, clean, scores[k], flips.get(k), confidence)
            )
        controls.update(named.get(where, {}))
        b = blind.get(where)
        beside: dict[str, Any] = {} if b is None else {"blind_baseline": b}
        out[model] = RelianceEntry(
            task=group.task,
            dataset=group.dataset,
            n_samples=len(group.ids),
            clean=_point(clean),
            controls=controls,
            **beside,
        )
    return out


def image_reliance(
    cells: Sequence[CellData],
    *,
    resamples: int,
    seed: int,
    confidence: float,
    skipped: Mapping[CellKey, str] | None = None,
    blind: Mapping[TaskCell, BlindBaseline] | None = None,
) -> dict[str, list[RelianceEntry]]:
    """model -> reliance entries, one per (task, dataset) that ran a control.

    skipped names control cells that produced no score (e.g. a swap in a dataset with one image) and
    why; they appear as a control with only its condition and the reason, so a missing control is never
    read as reliance 0. blind: (model, task, dataset) -> the task's blind baseline, shown beside."""
    named: dict[TaskCell, dict[str, Control]] = {}
    for key, reason in sorted((skipped or {}).items()):
        named.setdefault((key.model, key.task, key.dataset), {})[key.ref.name] = Control(
            condition=key.condition, skipped=reason
        )
    found: dict[TaskCell, RelianceEntry] = {}
    for group in align(cells) if cells else []:
        for model, entry in _group_entries(group, resamples, seed, confidence, blind or {}, named).items():
            found[(model, group.task, group.dataset)] = entry
    for where, controls in named.items():
        if where not in found:
            b = (blind or {}).get(where)
            extra: dict[str, Any] = {} if b is None else {"blind_baseline": b}
            found[where] = RelianceEntry(task=where[1], dataset=where[2], controls=controls, **extra)
    out: dict[str, list[RelianceEntry]] = {}
    for (model, _task, _dataset), entry in sorted(found.items()):
        out.setdefault(model, []).append(entry)
    return out

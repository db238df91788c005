"""advise(results, constraints) -> Advice: filter a run's models by deployment constraints, rank the
rest by an ARGUS weighting, and explain the choice. Reads only a run's Results (results.json)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from argus_eval.advisor.constraints import Constraints
from argus_eval.advisor.explain import (
    Candidate,
    choice_sentence,
    closest_misses,
    confidence_sentence,
    exclusion_sentence,
    no_model_sentences,
)
from argus_eval.advisor.figures import device_figures
from argus_eval.advisor.ranking import Confidence, Weighting, confidence, score, weighting
from argus_eval.advisor.rules import CHECKS, EFFICIENCY_CHECKS, Violation, violations
from argus_eval.advisor.view import RunView, read_view
from argus_eval.errors import ResultsError, UnknownNameError
from argus_eval.results_model import Results


@dataclass(frozen=True)
class Advice:
    """The recommendation (winner None when no model meets the constraints) and its explanation."""

    constraints: Constraints
    weights: dict[str, float]
    own_weights: bool
    candidates: list[Candidate]
    ranking: list[str]
    winner: str | None
    runner_up: str | None
    most_capable: str | None
    confidence: Confidence | None
    sentences: list[str]
    notes: list[str] = field(default_factory=list)
    closest_misses: list[str] = field(default_factory=list)

    @property
    def tie(self) -> bool:
        return self.confidence is not None and self.confidence.tie

    def to_json(self) -> dict[str, Any]:
        """Plain JSON with deterministic key order."""
        conf = self.confidence
        return {
            "constraints": self.constraints.to_json(),
            "weights": self.weights,
            "own_weights": self.own_weights,
            "winner": self.winner,
            "runner_up": self.runner_up,
            "most_capable": self.most_capable,
            "ranking": self.ranking,
            "tie": self.tie,
            "confidence": None
            if conf is None
            else {
                "share_winner_above_runner_up": conf.share,
                "unavailable": conf.unavailable,
                "intervals": {"winner": conf.intervals[0], "runner_up": conf.intervals[1]},
            },
            "candidates": [
                {
                    "model": c.name,
                    "eligible": c.eligible,
                    "score": c.score,
                    "score_left_out": c.score_left_out,
                    "P": c.p,
                    "axes": c.axes,
                    "figures": c.figures.to_json(),
                    "violations": [v.to_json() for v in c.violations],
                }
                for c in self.candidates
            ],
            "closest_misses": self.closest_misses,
            "sentences": self.sentences,
            "notes": self.notes,
        }


# Figures of a model without a profile: enough to ask a check for its limit alone.
_NO_FIGS = device_figures(None, None)


def _require_efficiency(run: RunView, constraints: Constraints) -> None:
    """A latency or memory limit on a run without any efficiency figure is a question it cannot answer."""
    asked = [
        CHECKS[n].option for n in EFFICIENCY_CHECKS if CHECKS[n].limit(constraints, _NO_FIGS) is not None
    ]
    if asked and all(m.efficiency is None for m in run.models.values()):
        options = " and ".join(asked)
        raise ResultsError(
            "results.json has no efficiency figures (field 'efficiency' is null or absent for every model: "
            f"{', '.join(run.models)}), but {options} cannot be checked without measured latency / peak "
            f"memory; rerun with efficiency profiling enabled, or drop {options}"
        )


def _task_p(run: RunView, task: str | None) -> tuple[str | None, list[str]]:
    """The task P is restricted to (None when not asked or not available) and a note when it cannot be."""
    if task is None:
        return None, []
    tables = {m: v.per_task for m, v in run.models.items() if v.per_task is not None}
    if not tables:
        return None, [
            f"P cannot be restricted to task {task!r}: results.json has no per-task capability "
            "(models.<model>.detail.P.per_task or clean scorecard_cells); P is over all tasks"
        ]
    known = sorted({t for table in tables.values() for t in table})
    if task not in known:
        raise UnknownNameError(f"unknown task {task!r} in results.json; valid: {', '.join(known)}")
    return task, []


def _candidate(run: RunView, name: str, constraints: Constraints, w: Weighting) -> Candidate:
    model = run.models[name]
    figs = device_figures(model.efficiency, constraints.device)
    found = violations(model, figs, constraints)
    p = model.axes["P"]
    if w.task is not None:
        p = (model.per_task or {}).get(w.task)
        if p is None:
            why = f"not run on task {w.task!r}"
            found.append(Violation("task", "--task", "", False, None, None, None, why))
    s = score(model, p, w)
    if s.value is None:
        why = "; ".join(f"{a}: {r}" for a, r in s.left_out.items()) or "no weighted term"
        found.append(Violation("score", "--weights", "", False, None, None, None, f"no ARGUS score ({why})"))
    return Candidate(name, p, dict(model.axes), s.value, s.left_out, figs, found)


def _notes(constraints: Constraints, candidates: list[Candidate], weights_e: float) -> list[str]:
    notes = []
    if any(f.source == "estimate" for c in candidates for f in (c.figures.latency_ms, c.figures.memory_gb)):
        notes.append(
            f"Figures on {constraints.device} are estimates, not measurements: latency is a roofline "
            "projection (FLOPs / peak FLOP/s against parameter bytes / bandwidth), memory the peak measured "
            "on the run's hardware."
        )
    if constraints.device is not None and weights_e > 0:
        notes.append(
            f"E is the run's measured efficiency axis; it is not recomputed for {constraints.device}."
        )
    return notes


def advise(results: Results, constraints: Constraints) -> Advice:
    """The deployment advice for one run's results under `constraints` (see docs/advisor.md)."""
    run = read_view(results)
    _require_efficiency(run, constraints)
    unknown = [a for a in constraints.min_axes if a not in run.axes]
    if unknown:
        raise UnknownNameError(
            f"--min {unknown[0]}=: not an axis of this run; valid: {', '.join(run.axes)} (results.json axes)"
        )
    task, notes = _task_p(run, constraints.task)
    w = weighting(run, constraints.weights, task)
    candidates = [_candidate(run, name, constraints, w) for name in run.models]
    notes += _notes(constraints, candidates, w.weights.get("E", 0.0))
    eligible = sorted((c for c in candidates if c.eligible), key=lambda c: (-(c.score or 0.0), c.name))
    with_p = [c for c in candidates if c.p is not None]
    # highest P; equal P goes to the first name, so the answer does not depend on dict order
    best = min(with_p, key=lambda c: (-(c.p or 0.0), c.name)) if with_p else None
    ranking = [c.name for c in eligible]
    most_capable = None if best is None else best.name
    if not eligible:
        misses = closest_misses(candidates)
        sentences = no_model_sentences(constraints.label, misses)
        return Advice(
            constraints=constraints,
            weights=w.weights,
            own_weights=w.own,
            candidates=candidates,
            ranking=ranking,
            winner=None,
            runner_up=None,
            most_capable=most_capable,
            confidence=None,
            sentences=sentences,
            notes=notes,
            closest_misses=[c.name for c in misses],
        )
    winner = eligible[0]
    runner_up = eligible[1] if len(eligible) > 1 else None
    conf = None
    if runner_up is not None:
        scores = {c.name: c.score or 0.0 for c in eligible}
        conf = confidence(run, w, winner.name, runner_up.name, scores)
    sentences = [choice_sentence(constraints.label, winner, best, w)]
    if _has_limits(constraints):
        sentences.append(exclusion_sentence(candidates))
    sentences.append(confidence_sentence(winner, runner_up, conf, run.resamples))
    return Advice(
        constraints=constraints,
        weights=w.weights,
        own_weights=w.own,
        candidates=candidates,
        ranking=ranking,
        winner=winner.name,
        runner_up=None if runner_up is None else runner_up.name,
        most_capable=most_capable,
        confidence=conf,
        sentences=sentences,
        notes=notes,
    )


def _has_limits(c: Constraints) -> bool:
    limits = (c.device, c.max_latency_ms, c.max_memory_gb, c.min_rr, c.task)
    return bool(c.min_axes) or any(v is not None for v in limits)

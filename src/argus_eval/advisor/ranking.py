"""Rank the eligible models by an ARGUS weighting, and say how sure the ranking is.

Tie rule: the winner is stated above the runner-up only when the run's head-to-head bootstrap share
P(winner beats runner-up) reaches the run's claim level (scoring.claim_confidence, 0.95 by default);
otherwise the two are tied. Without bootstrap shares (no bootstrap in the run, or weights other than the
run's own) only equal point values are a tie, and the explanation says the order is not a supported claim.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from argus_eval.advisor.constraints import NamedWeights, Weights, named
from argus_eval.advisor.view import Interval, ModelView, RunView
from argus_eval.errors import UnknownNameError
from argus_eval.results_model.weights import normalised

POINT_TIE = 1e-9


@dataclass(frozen=True)
class Weighting:
    """The weights used (normalised), whether they are the run's own ARGUS, and P's source."""

    weights: dict[str, float]
    own: bool
    task: str | None


def weighting(run: RunView, weights: Weights | NamedWeights | None, task: str | None) -> Weighting:
    """The run's own ARGUS is reused (with its intervals and pairwise shares) only when the weights equal
    the run's after normalisation and P is not restricted to a task. Weights are over the run's ARGUS
    terms (its results.json): a term the weights do not name weighs 0."""
    run_w = normalised(run.weights)
    given = {} if weights is None else named(weights)
    unknown = [a for a in given if a not in run_w]
    if unknown:
        raise UnknownNameError(
            f"--weights: {unknown[0]!r} is not an ARGUS term of this run; valid: {', '.join(run_w)}"
        )
    chosen = run_w if weights is None else normalised({a: given.get(a, 0.0) for a in run_w})
    same = all(math.isclose(chosen[a], run_w[a], rel_tol=1e-9, abs_tol=1e-12) for a in run_w)
    return Weighting(chosen, same and task is None, task)


@dataclass(frozen=True)
class Score:
    """A model's ranking score (None when no weighted term is defined) and the terms left out."""

    value: float | None
    left_out: dict[str, str]


def score(model: ModelView, p: float | None, w: Weighting) -> Score:
    """ARGUS under w: the run's value when w is its own, else the weighted mean of the defined terms
    (P from `p`), weights renormalised over them, like the scorecard does."""
    if w.own:
        overall = model.row.value("ARGUS")
        return Score(overall, {} if overall is not None else {"ARGUS": model.row.why_undefined("ARGUS")})
    terms = {**{a: model.row.value(a) for a in w.weights}, "P": p}
    left_out = {a: model.row.why_undefined(a) for a, wt in w.weights.items() if wt > 0 and terms[a] is None}
    used = {a: wt for a, wt in w.weights.items() if wt > 0 and terms[a] is not None}
    if not used:
        return Score(None, left_out)
    return Score(sum(wt * float(terms[a] or 0.0) for a, wt in normalised(used).items()), left_out)


@dataclass(frozen=True)
class Confidence:
    """Share of bootstrap resamples with the winner above the runner-up (None when not available, with
    why), the two ARGUS intervals, and whether the pair counts as a tie."""

    share: float | None
    unavailable: str | None
    intervals: tuple[Interval, Interval]
    tie: bool


def confidence(
    run: RunView, w: Weighting, winner: str, runner_up: str, scores: dict[str, float]
) -> Confidence:
    """How sure the order winner > runner-up is, and the tie rule (module docstring)."""
    point_tie = abs(scores[winner] - scores[runner_up]) <= POINT_TIE
    if not w.own:
        why = "the bootstrap shares in results.json are for the run's own weights" + (
            f" and P over all tasks, not {w.task!r} alone" if w.task else ""
        )
        return Confidence(None, why, (None, None), point_tie)
    ivs = (run.models[winner].row.interval("ARGUS"), run.models[runner_up].row.interval("ARGUS"))
    share = run.rankings.share("ARGUS", winner, runner_up)
    if share is None:
        why = "results.json has no bootstrap pairwise share for this pair (rankings.pairwise.ARGUS)"
        return Confidence(None, why, ivs, point_tie)
    tie = point_tie or share < run.claim_confidence
    return Confidence(share, None, ivs, tie)

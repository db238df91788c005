"""The advice in words: the choice and what it gives up, the exclusions, and how sure the ranking is."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from argus_eval.advisor.figures import DeviceFigures
from argus_eval.advisor.ranking import Confidence, Weighting
from argus_eval.advisor.rules import Violation

MIN_GAIN = 0.0005  # smaller differences print as 0.000 and say nothing
MAX_MISSES = 5


@dataclass(frozen=True)
class Candidate:
    """One model as the advisor sees it under the constraints."""

    name: str
    p: float | None
    axes: dict[str, float | None]
    score: float | None
    score_left_out: dict[str, str]
    figures: DeviceFigures
    violations: list[Violation]

    @property
    def eligible(self) -> bool:
        return not self.violations


def _weights_text(w: Weighting) -> str:
    task = f", P on {w.task}" if w.task else ""
    if w.own:
        return "with the run's weights"
    parts = ", ".join(f"{a} {v:.2f}" for a, v in w.weights.items())
    return f"with weights {parts}{task}"


def _gains(winner: Candidate, best: Candidate, terms: Sequence[str]) -> list[str]:
    """What the winner gains over the most capable model on the ARGUS terms other than P, and latency."""
    out = []
    for a in (t for t in terms if t != "P"):
        mine, theirs = winner.axes[a], best.axes[a]
        if mine is not None and theirs is not None and mine - theirs >= MIN_GAIN:
            out.append(f"{a} +{mine - theirs:.3f}")
    lat_w, lat_b = winner.figures.latency_ms.value, best.figures.latency_ms.value
    if lat_w is not None and lat_b is not None and lat_w < lat_b:
        out.append(f"latency {lat_w:.0f} ms against {lat_b:.0f} ms")
    return out


def choice_sentence(label: str, winner: Candidate, best: Candidate | None, w: Weighting) -> str:
    """Which model, its score, and what it gives up against the most capable model (by P)."""
    head = f"For {label}, recommend {winner.name} (ARGUS {winner.score:.3f} {_weights_text(w)})"
    if best is None or winner.p is None or best.p is None:
        return f"{head}; capability (P) is undefined, so what it gives up on capability cannot be said."
    if best.name == winner.name or winner.p >= best.p:
        return f"{head}; it is also the most capable model (P {winner.p:.3f}), so it gives up no capability."
    excluded = ", which the constraints exclude" if not best.eligible else ""
    gains = _gains(winner, best, list(w.weights))
    trade = f" for {', '.join(gains)}" if gains else " and is better on no other axis"
    return (
        f"{head}; against {best.name}, the most capable model (P {best.p:.3f}){excluded}, "
        f"it gives up {best.p - winner.p:.3f} in P{trade}."
    )


def exclusion_sentence(candidates: Sequence[Candidate]) -> str:
    """Which constraint excluded which model, with the figure and the limit."""
    excluded = [c for c in candidates if not c.eligible]
    if not excluded:
        return "No model was excluded by the constraints."
    parts = [f"{c.name} ({'; '.join(v.describe() for v in c.violations)})" for c in excluded]
    return f"Excluded: {', '.join(parts)}."


def confidence_sentence(
    winner: Candidate, runner_up: Candidate | None, conf: Confidence | None, resamples: int | None
) -> str:
    """How sure the order is: the bootstrap share, a tie, or why no share is available."""
    if runner_up is None or conf is None:
        return f"{winner.name} is the only model that meets the constraints, so there is no runner-up."
    n = f" of {resamples}" if resamples else ""
    pair = f"{winner.name} and {runner_up.name}"
    if conf.tie:
        evidence = (
            f"{winner.name} above in {100 * conf.share:.0f} %{n} resamples"
            if conf.share is not None
            else (f"equal point values {winner.score:.3f}")
        )
        ivs = ""
        mine, theirs = conf.intervals
        if mine is not None and theirs is not None:
            ivs = f"ARGUS [{mine[0]:.3f}, {mine[1]:.3f}] against [{theirs[0]:.3f}, {theirs[1]:.3f}], "
        return (
            f"{pair} are tied within the intervals ({ivs}{evidence}); pick between them on the other figures."
        )
    if conf.share is not None:
        return (
            f"The bootstrap puts {winner.name} above the runner-up {runner_up.name} "
            f"in {100 * conf.share:.0f} %{n} resamples."
        )
    lead = (winner.score or 0.0) - (runner_up.score or 0.0)
    return (
        f"{winner.name} leads the runner-up {runner_up.name} by {lead:.3f} in point value, which is not a "
        f"supported claim: no bootstrap probability is available because {conf.unavailable}."
    )


def closest_misses(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Models ordered by how close they come: fewest unknown figures, then the largest relative miss."""

    def key(c: Candidate) -> tuple[int, float, str]:
        unknown = sum(v.value is None for v in c.violations)
        known = [v.relative_miss for v in c.violations if v.value is not None]
        return (unknown, max(known, default=0.0), c.name)

    return sorted(candidates, key=key)[:MAX_MISSES]


def no_model_sentences(label: str, misses: Sequence[Candidate]) -> list[str]:
    """The message when nothing meets the constraints: the closest misses, which constraint, how far."""
    parts = [f"{c.name}: {'; '.join(v.describe() for v in c.violations)}" for c in misses]
    return [f"No model satisfies the constraints for {label}.", f"Closest misses: {' | '.join(parts)}."]

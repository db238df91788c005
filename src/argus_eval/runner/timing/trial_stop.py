"""When the timing trials stop: once every model's E interval is narrower than a stated width, or at
the cap (efficiency.trials), never before efficiency.min_trials rounds.

The width is E's own: the same bootstrap over rounds, seed, mode and confidence as the scorecard
(scoring/efficiency_axis.py), on the rounds measured so far, so the interval results.json shows for E
is the one the rule looked at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from argus_eval.efficiency.trials import TaskTiming
from argus_eval.scoring.efficiency_axis import efficiency_from_timings
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.statistics import percentile_interval


@dataclass(frozen=True)
class StopRecord:
    """The stopping rule and what it did: the width and round bounds, the rounds run, why it stopped,
    and the widest E interval when it did (None: not computable, e.g. no resamples or one model)."""

    max_width: float | None
    min_rounds: int
    max_rounds: int
    rounds: int
    reason: str  # "width" (every E interval narrow enough), "cap", or "no trials"
    widest: float | None

    def to_json(self) -> dict[str, object]:
        return {
            "rule": "stop when every model's E interval is at most max_width wide (after min_rounds "
            "rounds), else at max_rounds",
            "max_width": self.max_width,
            "min_rounds": self.min_rounds,
            "max_rounds": self.max_rounds,
            "rounds": self.rounds,
            "reason": self.reason,
            "widest_e_interval": self.widest,
        }


def e_widths(
    timings: Mapping[tuple[str, str], TaskTiming], options: ScoringOptions, undefined: Mapping[str, str]
) -> dict[str, float]:
    """Each model's E interval width on these timings (models whose E is undefined are left out)."""
    models = sorted({m for m, _t in timings})
    rows = efficiency_from_timings(
        timings, models, options.resamples, options.seed, options.efficiency_mode, options.budgets, undefined
    )
    out: dict[str, float] = {}
    for m, axis in rows.axes.items():
        ci = percentile_interval(axis.values, options.confidence)
        if ci is not None:
            out[m] = ci[1] - ci[0]
    return out


def narrow_enough(widths: Mapping[str, float], max_width: float | None) -> bool:
    """True when there is a width to judge and every one is at most max_width."""
    return max_width is not None and bool(widths) and max(widths.values()) <= max_width

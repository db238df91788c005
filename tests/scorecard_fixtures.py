"""Reading the scorecard (the Results model's ScorecardPart that scoring returns) in scoring tests."""

from __future__ import annotations

from argus_eval.results_model.scorecard import ScorecardPart
from argus_eval.scoring.types import AxisValue


def axes_of(sc: ScorecardPart, model: str) -> dict[str, AxisValue]:
    """Each axis of a model's row as value, raw value, reason it is undefined and detail."""
    row = sc.models[model]
    return {
        a: AxisValue(row.value(a), row.raw.get(a), row.undefined.get(a), row.detail[a].model_dump())
        for a in sc.axis_names
    }

"""Scoring options: every choice the paper leaves open is a named option recorded in results.json."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, create_model, model_validator
from pydantic_core import PydanticCustomError

from argus_eval.scoring.axis_registry import use_axes, weighted_axes
from argus_eval.scoring.budgets import EfficiencyBudgets

__all__ = ["AxisWeights", "EfficiencyBudgets", "ScoringOptions"]


class _Weights(BaseModel):
    """Weights of the ARGUS terms: the axes declared with a weight (scoring/axis_registry.py), each
    defaulting to its axis's weight; normalised to sum 1 over the defined terms."""

    # allow_inf_nan=False: an infinite weight would leave ARGUS undefined with no reason given
    model_config = ConfigDict(extra="allow", frozen=True, allow_inf_nan=False)
    # terms declared after this model was built (a plugin or test registering an axis late)
    __pydantic_extra__: dict[str, Annotated[float, Field(ge=0, strict=True)]] = Field(init=False)

    @model_validator(mode="before")
    @classmethod
    def _known_terms(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        terms = weighted_axes()
        unknown = sorted(str(k) for k in data if k not in terms)
        if unknown:
            raise PydanticCustomError(
                "unknown_term",
                "{key} is not a term of ARGUS (an axis declared with a weight); valid: {valid}",
                {"key": unknown[0], "valid": ", ".join(terms)},
            )
        late = {n: w for n, w in terms.items() if n not in cls.model_fields}
        return {**late, **data}

    @model_validator(mode="after")
    def _positive_total(self) -> _Weights:
        if max(self.as_dict().values(), default=0.0) <= 0:
            raise ValueError("weights must not all be zero")
        return self

    def as_dict(self) -> dict[str, float]:
        """Term -> weight, in axis order."""
        fields = {f: float(getattr(self, f)) for f in type(self).model_fields}
        return {**fields, **(self.__pydantic_extra__ or {})}


if TYPE_CHECKING:

    class AxisWeights(_Weights):
        """Weights of the ARGUS terms (the registered axes' fields are built at import)."""

else:  # one field per term declared when scoring is imported, so each is a typed, documented option
    AxisWeights = create_model(
        "AxisWeights",
        __base__=_Weights,
        __module__=__name__,
        __doc__=_Weights.__doc__,
        **{n: (StrictFloat, Field(default=w, ge=0)) for n, w in weighted_axes().items()},
    )


class ScoringOptions(BaseModel):
    """How the scorecard is computed (the per-task score composition belongs to the tasks)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # the plugin axes (entry points of argus_eval.axes) the scorecard adds; loaded before the weights are
    # read, since one may be a term of ARGUS. Out of the echo: results.json lists its axes anyway.
    axes: tuple[str, ...] = Field(
        default=(),
        exclude=True,
        description="Axes from plugins (entry-point group argus_eval.axes) this run adds to the scorecard; "
        "a plugin axis no run names is never imported. The built-in axes are always computed.",
    )
    weights: AxisWeights = Field(default_factory=AxisWeights)  # built when used: terms declared late count
    cdc_variant: Literal["per-task", "pooled", "cv"] = "per-task"
    efficiency_mode: Literal["pool", "budget"] = "pool"
    budgets: EfficiencyBudgets = EfficiencyBudgets()
    resamples: StrictInt = Field(
        default=1000, ge=0, description="bootstrap resamples; 0 turns the bootstrap off"
    )
    seed: StrictInt = 0
    confidence: StrictFloat = Field(default=0.95, gt=0, lt=1)
    claim_confidence: StrictFloat = Field(
        default=0.95,
        gt=0.5,
        lt=1,
        description="'A above B' is stated only when the paired bootstrap gives at least this share of "
        "resamples in which A beats B head to head; otherwise the two are tied.",
    )
    claim_min_scored: StrictFloat = Field(
        default=0.95,
        ge=0,
        le=1,
        description="A claim between two models needs both to have scored at least this share of the "
        "samples of every cell they share; otherwise the pair is 'incomplete' and nothing is claimed.",
    )
    min_format_rate: StrictFloat = Field(
        default=0.5,
        ge=0,
        le=1,
        description="A generative cell whose answer-format rate (the share of answers in the form the "
        "question asks for, or of non-empty captions) is below this makes no claim: every head-to-head "
        "claim that reads it is withheld, with the reason.",
    )
    reliance: Literal["reported"] = Field(
        default="reported",
        description="How image reliance (clean minus swapped/blank-image score) enters the scorecard: "
        "'reported' beside the axes, never weighted into R or ARGUS, so the paper's four axes stay "
        "comparable. Weighting it into the reliability side is not implemented yet.",
    )

    @model_validator(mode="before")
    @classmethod
    def _plugin_axes_first(cls, data: Any) -> Any:
        named = data.get("axes") if isinstance(data, Mapping) else None
        if isinstance(named, list | tuple):
            use_axes([a for a in named if isinstance(a, str)])  # the field itself refuses the rest
        return data

    @model_validator(mode="after")
    def _budgets_for_budget_mode(self) -> ScoringOptions:
        if self.efficiency_mode == "budget" and not any(
            v is not None for v in self.budgets.model_dump().values()
        ):
            raise ValueError('efficiency_mode="budget" needs at least one budget in budgets')
        return self

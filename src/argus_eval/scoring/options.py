"""Scoring options: every choice the paper leaves open is a named option recorded in results.json."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, model_validator


class AxisWeights(BaseModel):
    """Weights of the ARGUS terms; normalised to sum 1 over the defined terms."""

    # allow_inf_nan=False: an infinite weight would leave ARGUS undefined with no reason given
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    P: StrictFloat = Field(default=0.25, ge=0)
    CDC: StrictFloat = Field(default=0.25, ge=0)
    RR: StrictFloat = Field(default=0.25, ge=0)
    E: StrictFloat = Field(default=0.25, ge=0)

    @model_validator(mode="after")
    def _positive_total(self) -> AxisWeights:
        if max(self.P, self.CDC, self.RR, self.E) <= 0:
            raise ValueError("weights must not all be zero")
        return self

    def as_dict(self) -> dict[str, float]:
        return {"P": self.P, "CDC": self.CDC, "RR": self.RR, "E": self.E}


class EfficiencyBudgets(BaseModel):
    """Fixed budgets for efficiency_mode="budget"; a sub-metric without a budget is left out."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    latency_ms: StrictFloat | None = Field(default=None, gt=0)
    memory_mb: StrictFloat | None = Field(default=None, gt=0)
    flops_per_sample: StrictFloat | None = Field(default=None, gt=0)
    throughput_per_s: StrictFloat | None = Field(default=None, gt=0)


class ScoringOptions(BaseModel):
    """How the scorecard is computed (the per-task score composition belongs to the tasks)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    weights: AxisWeights = AxisWeights()
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

    @model_validator(mode="after")
    def _budgets_for_budget_mode(self) -> ScoringOptions:
        if self.efficiency_mode == "budget" and not any(
            v is not None for v in self.budgets.model_dump().values()
        ):
            raise ValueError('efficiency_mode="budget" needs at least one budget in budgets')
        return self

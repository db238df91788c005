"""The efficiency budgets of efficiency_mode="budget" (a scoring option the efficiency axis reads)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictFloat


class EfficiencyBudgets(BaseModel):
    """Fixed budgets for efficiency_mode="budget"; a sub-metric without a budget is left out."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    latency_ms: StrictFloat | None = Field(default=None, gt=0)
    memory_mb: StrictFloat | None = Field(default=None, gt=0)
    flops_per_sample: StrictFloat | None = Field(default=None, gt=0)
    throughput_per_s: StrictFloat | None = Field(default=None, gt=0)

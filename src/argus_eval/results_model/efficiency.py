"""Efficiency blocks of results.json: each model's measured profile with its device projections, and
the run's timing trials (per model and task) with their noise and what was left out of E."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from argus_eval.results_model.base import Block, Json, Measured


class Fingerprint(Block):
    """The hardware (and software) a figure was measured on. id identifies it; cpu, gpu, device and
    dtype are what readers match and project on; further keys (cores, torch, driver, ...) are kept."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, Json] = Field(init=False)

    id: str | None = None
    cpu: str | None = None
    gpu: str | None = None
    device: str | None = None
    dtype: str | None = None

    @property
    def hardware(self) -> str:
        """The device a person would name: the GPU, else the CPU, else the fingerprint id."""
        return self.gpu or self.cpu or self.id or "unnamed hardware"


class PassBlock(Block):
    """One pass over the weights of one sample's work: its FLOPs and the weight bytes it reads."""

    flops: int
    weight_bytes: int


class Projection(Block):
    """A roofline estimate of one model on a catalogued device (never a measurement, never in E):
    the sum over passes of max(FLOPs / peak, weight bytes / bandwidth). compute_dtype and peak_basis
    name the peak used (the model's dtype, or the nearest the device has, which note then says)."""

    estimate: bool
    device: str
    dtype: str
    source: str
    memory_bound_ms: Measured
    fits_in_memory: bool
    weights_bytes: int
    device_memory_bytes: Measured
    compute_bound_ms: Measured | None
    latency_ms: Measured | None
    bound: str | None
    note: str | None = None
    compute_dtype: str | None = None
    peak_flops_per_s: Measured | None = None
    peak_basis: str | None = None
    passes: int | None = None
    weight_bytes_read: int | None = None


class EfficiencyBlock(Block):
    """Measured efficiency of one model on one hardware fingerprint, with its device projections."""

    latency_ms_p50: Measured
    latency_ms_p95: Measured
    throughput_per_s: Measured
    peak_memory_mb: Measured
    flops_per_sample: int | None
    params: int | None
    fingerprint: Fingerprint
    projections: list[Projection] | None = None
    passes: list[PassBlock] | None = None


class TrialBlock(Block):
    """One timing trial: latency per sample, throughput, and the round it ran in."""

    latency_ms: Measured
    throughput_per_s: Measured
    round: int


class TaskTimingBlock(Block):
    """Every timing figure of one model on one task."""

    model: str
    task: str
    protocol: str
    trials: list[TrialBlock]
    failed_trials: int
    latency_ms_median: Measured | None
    throughput_per_s_median: Measured | None
    latency_spread: Measured | None
    memory_mb: Measured | None
    memory_basis: str
    flops_per_sample: int | None
    params: int | None
    fingerprint: Fingerprint
    passes: list[PassBlock] | None = None


class TimingNoise(Block):
    """The run's timing noise: the median relative latency spread across trials, and how it is computed."""

    median_latency_spread: Measured | None
    basis: str


class LeftOut(Block):
    """A (model, task) left out of E, and why."""

    model: str
    task: str
    reason: str


class TimingStop(Block):
    """When the timing rounds stopped: the rule, its width and round bounds, the rounds run, why
    ("width": every E interval narrow enough; "cap": max_rounds reached), and the widest E interval."""

    rule: str
    max_width: Measured | None
    min_rounds: int
    max_rounds: int
    rounds: int
    reason: str
    widest_e_interval: Measured | None


class Timing(Block):
    """The run's timing trials, their noise, and what was left out of E and why."""

    trials_per_task: int
    interleaved: bool
    noise: TimingNoise
    warning: str | None
    failed_trials: int
    undefined: dict[str, str]
    left_out: list[LeftOut]
    per_task: list[TaskTimingBlock]
    stopping: TimingStop | None = None  # absent in results written before the rule

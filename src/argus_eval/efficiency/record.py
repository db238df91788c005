"""The efficiency figures of one model on one hardware fingerprint (plain data, no torch import)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from argus_eval.efficiency.work import Pass, passes_from_json, passes_to_json
from argus_eval.errors import ResultsError

FIELDS = (  # the measured figures, in display order
    "latency_ms_p50",
    "latency_ms_p95",
    "throughput_per_s",
    "peak_memory_mb",
    "flops_per_sample",
    "params",
)


@dataclass(frozen=True)
class EfficiencyProfile:
    """Measured efficiency of one model.

    latency_ms_*: per sample at batch 1 after warm-up; throughput_per_s: samples per second at the
    measured batch size; peak_memory_mb: the largest memory_mb over the model's tasks (efficiency/trials.py:
    on CUDA max_memory_allocated during a batch, on CPU the weights, params x bytes per parameter; 0.0
    when none was measured);
    flops_per_sample: 2 x multiply-accumulates of one sample (None when not counted); passes: that
    sample's passes over the weights with their FLOPs and weight bytes (work.py; None when not counted).
    """

    latency_ms_p50: float
    latency_ms_p95: float
    throughput_per_s: float
    peak_memory_mb: float
    flops_per_sample: int | None
    params: int | None
    fingerprint: dict[str, Any] = field(default_factory=dict)
    passes: tuple[Pass, ...] | None = None

    @property
    def fingerprint_id(self) -> str:
        """The short id of the hardware fingerprint ("" when the profile carries none)."""
        return str(self.fingerprint.get("id", ""))

    def to_json(self) -> dict[str, Any]:
        """Plain JSON: exactly the measured fields plus the fingerprint (and the passes, when counted)."""
        out: dict[str, Any] = {
            "latency_ms_p50": float(self.latency_ms_p50),
            "latency_ms_p95": float(self.latency_ms_p95),
            "throughput_per_s": float(self.throughput_per_s),
            "peak_memory_mb": float(self.peak_memory_mb),
            "flops_per_sample": None if self.flops_per_sample is None else int(self.flops_per_sample),
            "params": None if self.params is None else int(self.params),
            "fingerprint": dict(sorted(self.fingerprint.items())),
        }
        if self.passes is not None:
            out["passes"] = passes_to_json(self.passes)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EfficiencyProfile:
        """Inverse of to_json; raises ResultsError naming a missing field."""
        missing = [k for k in (*FIELDS, "fingerprint") if k not in data]
        if missing:
            raise ResultsError(f"efficiency profile is missing field(s) {', '.join(missing)}")
        flops = data["flops_per_sample"]
        params = data["params"]
        return cls(
            latency_ms_p50=float(data["latency_ms_p50"]),
            latency_ms_p95=float(data["latency_ms_p95"]),
            throughput_per_s=float(data["throughput_per_s"]),
            peak_memory_mb=float(data["peak_memory_mb"]),
            flops_per_sample=None if flops is None else int(flops),
            params=None if params is None else int(params),
            fingerprint=dict(data["fingerprint"]),
            passes=passes_from_json(data.get("passes")),
        )

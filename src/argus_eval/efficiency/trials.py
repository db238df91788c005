"""Timing trials: one model on one task, measured several times so that timing carries its noise.

A trial is one latency figure (the fastest of `repeats` batch-1 calls: load on a shared machine only
ever adds time, so the minimum is the stable estimate, as timeit advises) and one throughput figure
(samples per second of a batch). Trials of all models are interleaved by the runner (A B C A B C ...)
so that load drift on a shared machine hits every model alike; the bootstrap resamples trials, so E
gets an interval.
Memory and FLOPs do not depend on load and are measured once per (model, task).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from argus_eval.efficiency.work import DTYPE_BYTES, Pass, passes_from_json, passes_to_json
from argus_eval.errors import ResultsError


@dataclass(frozen=True)
class Trial:
    """One timing trial: per-sample latency at batch 1 (fastest of the trial's repeats) and throughput."""

    latency_ms: float
    throughput_per_s: float
    round: int = 0  # which interleaved round (A B C A B C ...) it belongs to

    def to_json(self) -> dict[str, float | int]:
        return {
            "latency_ms": float(self.latency_ms),
            "throughput_per_s": float(self.throughput_per_s),
            "round": int(self.round),
        }


@dataclass(frozen=True)
class TaskTiming:
    """Every timing figure of one model on one task, on one hardware fingerprint.

    memory_mb: on CUDA max_memory_allocated during a batch; on CPU the model's weights (the resident
    set's growth depends on the allocator's history). memory_basis names which of the two it is.
    passes: one sample's passes over the weights (work.py), which the roofline projections read."""

    model: str
    task: str
    protocol: str
    trials: tuple[Trial, ...]
    memory_mb: float | None
    memory_basis: str
    flops_per_sample: int | None
    params: int | None
    fingerprint: dict[str, Any] = field(default_factory=dict)
    failed_trials: int = 0
    passes: tuple[Pass, ...] | None = None

    @property
    def latencies(self) -> np.ndarray:
        return np.array([t.latency_ms for t in self.trials], dtype=np.float64)

    @property
    def throughputs(self) -> np.ndarray:
        return np.array([t.throughput_per_s for t in self.trials], dtype=np.float64)

    @property
    def fingerprint_id(self) -> str:
        return str(self.fingerprint.get("id", ""))

    def spread(self) -> float | None:
        """Relative spread of the trial latencies: (max - min) / median; None with fewer than 2 trials."""
        lat = self.latencies
        if lat.size < 2 or float(np.median(lat)) <= 0:
            return None
        return float((lat.max() - lat.min()) / np.median(lat))

    def to_json(self) -> dict[str, Any]:
        lat = self.latencies
        thr = self.throughputs
        out: dict[str, Any] = {
            "model": self.model,
            "task": self.task,
            "protocol": self.protocol,
            "trials": [t.to_json() for t in self.trials],
            "failed_trials": self.failed_trials,
            "latency_ms_median": float(np.median(lat)) if lat.size else None,
            "throughput_per_s_median": float(np.median(thr)) if thr.size else None,
            "latency_spread": self.spread(),
            "memory_mb": self.memory_mb,
            "memory_basis": self.memory_basis,
            "flops_per_sample": self.flops_per_sample,
            "params": self.params,
            "fingerprint": dict(sorted(self.fingerprint.items())),
        }
        if self.passes is not None:
            out["passes"] = passes_to_json(self.passes)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskTiming:
        """Inverse of to_json (derived medians are recomputed); ResultsError names a missing field."""
        need = ("model", "task", "protocol", "trials", "memory_mb", "memory_basis", "flops_per_sample")
        missing = [k for k in need if k not in data]
        if missing:
            raise ResultsError(f"task timing is missing field(s) {', '.join(missing)}")
        return cls(
            model=str(data["model"]),
            task=str(data["task"]),
            protocol=str(data["protocol"]),
            trials=tuple(
                Trial(float(t["latency_ms"]), float(t["throughput_per_s"]), int(t.get("round", i)))
                for i, t in enumerate(data["trials"])
            ),
            memory_mb=None if data["memory_mb"] is None else float(data["memory_mb"]),
            memory_basis=str(data["memory_basis"]),
            flops_per_sample=None if data["flops_per_sample"] is None else int(data["flops_per_sample"]),
            params=None if data.get("params") is None else int(data["params"]),
            fingerprint=dict(data.get("fingerprint") or {}),
            failed_trials=int(data.get("failed_trials", 0)),
            passes=passes_from_json(data.get("passes")),
        )


def sync_barrier(device: str) -> Callable[[], None]:
    """A barrier for timing: CUDA work is asynchronous, so time only after it finished."""
    if device.startswith("cuda"):
        import torch

        return lambda: torch.cuda.synchronize(torch.device(device))
    return lambda: None


def timed(fn: Callable[[], Any], sync: Callable[[], None]) -> float:
    sync()
    start = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - start


def measure_trial(
    run_batch: Callable[[int], Any], batch_size: int, device: str, repeats: int, warmup: int = 1
) -> Trial:
    """One trial: `warmup` untimed calls, then the fastest of `repeats` batch-1 calls (ms per sample) and
    the throughput of one batch call (the trials give throughput its spread; one call keeps a trial short)."""
    if batch_size < 1 or repeats < 1 or warmup < 0:
        raise ValueError("batch_size and repeats must be >= 1 and warmup >= 0")
    sync = sync_barrier(device)
    for _ in range(warmup):
        run_batch(1)
    single = np.array([timed(lambda: run_batch(1), sync) for _ in range(repeats)]) * 1000.0
    batched = timed(lambda: run_batch(batch_size), sync)
    return Trial(float(single.min()), float(batch_size / batched))


def measure_memory_mb(
    run_batch: Callable[[], Any], device: str, params: int | None, dtype: str
) -> tuple[float | None, str]:
    """Peak memory of one batch and what it means.

    CUDA: max_memory_allocated after a reset (this model's tensors, weights and activations). CPU: the
    weights (params x bytes per parameter). The resident set's growth during a batch was tried and
    dropped: it depends on what the allocator kept from earlier work (the same batch measured 4.8 MB in
    one run and 15.1 MB in the next), so it would make E move between identical runs."""
    if device.startswith("cuda"):
        import torch

        dev = torch.device(device)
        torch.cuda.reset_peak_memory_stats(dev)
        run_batch()
        torch.cuda.synchronize(dev)
        return float(torch.cuda.max_memory_allocated(dev)) / (1024.0 * 1024.0), "cuda max_memory_allocated"
    if params is None:
        return None, "not measurable on CPU without a parameter count"
    return params * DTYPE_BYTES.get(dtype, 4) / (1024.0 * 1024.0), "weights (params x bytes per parameter)"


def summary_spread(timings: Sequence[TaskTiming]) -> float | None:
    """The run's timing noise: the median over (model, task) of the relative latency spread."""
    spreads = [s for t in timings if (s := t.spread()) is not None]
    return float(np.median(spreads)) if spreads else None

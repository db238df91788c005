"""Measure latency, throughput, peak memory and FLOPs of a plain callable (no runner or task import)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import psutil

from argus_eval.efficiency.fingerprint import hardware_fingerprint
from argus_eval.efficiency.flops import count_flops
from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.efficiency.trials import sync_barrier, timed

__all__ = ["EfficiencyProfile", "measure", "peak_rss_mb"]


def peak_rss_mb() -> float:
    """Peak resident set size of this whole process in MB (since it started, not just one call)."""
    if sys.platform != "win32":
        import resource

        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        # ru_maxrss is in bytes on macOS, kilobytes on Linux
        return float(kb) / (1024.0 * 1024.0) if sys.platform == "darwin" else float(kb) / 1024.0
    info = psutil.Process().memory_info()
    return float(getattr(info, "peak_wset", info.rss)) / (1024.0 * 1024.0)


def measure(
    run_batch: Callable[[int], Any],
    batch_size: int,
    device: str,
    warmup: int = 2,
    repeats: int = 10,
    flops_fn: Callable[[], Any] | None = None,
    params: int | None = None,
    dtype: str = "float32",
) -> EfficiencyProfile:
    """Profile run_batch(n), which processes n samples.

    latency: run_batch(1) `repeats` times after `warmup` calls, p50 and p95 in ms per sample.
    throughput: batch_size / median seconds of run_batch(batch_size) over `repeats` calls, after warm-up.
    peak memory: on CUDA, torch.cuda.max_memory_allocated after a reset (this model's tensors only); on
    CPU, the process-wide peak RSS, which includes everything the process loaded before (an upper bound).
    flops_per_sample: count_flops(flops_fn) (2 x MACs of one sample), when flops_fn is given.
    """
    if batch_size < 1 or repeats < 1 or warmup < 0:
        raise ValueError("batch_size and repeats must be >= 1 and warmup >= 0")
    sync = sync_barrier(device)
    cuda = device.startswith("cuda")
    if cuda:
        import torch

        torch.cuda.reset_peak_memory_stats(torch.device(device))
    for _ in range(warmup):
        run_batch(1)
        run_batch(batch_size)
    single = np.array([timed(lambda: run_batch(1), sync) for _ in range(repeats)]) * 1000.0
    batched = np.array([timed(lambda: run_batch(batch_size), sync) for _ in range(repeats)])
    if cuda:
        import torch

        peak = float(torch.cuda.max_memory_allocated(torch.device(device))) / (1024.0 * 1024.0)
    else:
        peak = peak_rss_mb()
    return EfficiencyProfile(
        latency_ms_p50=float(np.percentile(single, 50)),
        latency_ms_p95=float(np.percentile(single, 95)),
        throughput_per_s=float(batch_size / np.median(batched)),
        peak_memory_mb=peak,
        flops_per_sample=None if flops_fn is None else count_flops(flops_fn),
        params=params,
        fingerprint=hardware_fingerprint(device, dtype),
    )

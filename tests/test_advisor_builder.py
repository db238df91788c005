"""Hand-made results.json dicts for the advisor tests (only the fields the advisor reads, plus the
top-level fields a results file always has)."""

from __future__ import annotations

from typing import Any

RUN_WEIGHTS = {"P": 0.25, "CDC": 0.25, "RR": 0.25, "E": 0.25}


def profile(
    latency_ms: float,
    memory_mb: float,
    *,
    flops: int | None = 2 * 10**9,
    params: int | None = 10**8,
    gpu: str | None = "NVIDIA H200",
    cpu: str = "Intel(R) Xeon(R) CPU @ 2.20GHz",
    dtype: str = "float32",
) -> dict[str, Any]:
    """An efficiency profile as results.json stores it."""
    return {
        "latency_ms_p50": latency_ms,
        "latency_ms_p95": latency_ms * 1.1,
        "throughput_per_s": 1000.0 / latency_ms,
        "peak_memory_mb": memory_mb,
        "flops_per_sample": flops,
        "params": params,
        "fingerprint": {"id": "abc123", "gpu": gpu, "cpu": cpu, "dtype": dtype, "device": "cuda"},
    }


def model(
    P: float | None,
    CDC: float | None,
    RR: float | None,
    E: float | None,
    *,
    argus: float | None = None,
    interval: tuple[float, float] | None = None,
    per_task: dict[str, float] | None = None,
) -> dict[str, Any]:
    """A model card; ARGUS defaults to the run's equal weights renormalised over the defined terms."""
    terms = {"P": P, "CDC": CDC, "RR": RR, "E": E}
    defined = [v for v in terms.values() if v is not None]
    if argus is None and defined:
        argus = sum(defined) / len(defined)
    detail: dict[str, Any] = {"P": {"per_task": per_task}} if per_task is not None else {"P": {}}
    return {
        **terms,
        "ARGUS": argus,
        "R": None,
        "undefined": {a: f"{a} undefined in this test" for a, v in terms.items() if v is None},
        "detail": detail,
        "intervals": {"ARGUS": None if interval is None else list(interval)},
    }


def results(
    models: dict[str, dict[str, Any]],
    efficiency: dict[str, dict[str, Any] | None] | None = None,
    pairwise: dict[str, dict[str, float | None]] | None = None,
    resamples: int = 1000,
) -> dict[str, Any]:
    """A results.json dict; pairwise is the ARGUS share table pairwise[A][B] = P(A above B)."""
    return {
        "schema": "argus-eval/results/1",
        "models": models,
        "rankings": {"pairwise": None if pairwise is None else {"ARGUS": pairwise, "P": {}}},
        "bootstrap": {"resamples": resamples, "seed": 0, "confidence": 0.95, "notes": []},
        "scoring_options": {"weights": dict(RUN_WEIGHTS)},
        "scorecard_cells": [],
        "cells": [],
        "efficiency": efficiency if efficiency is not None else {m: None for m in models},
        "manifest": {"config": {}, "hardware": {}},
        "notes": [],
    }


def shares(order: list[str], winner_share: float = 0.9) -> dict[str, dict[str, float | None]]:
    """A pairwise table in which each earlier model beats each later one in `winner_share` of resamples."""
    out: dict[str, dict[str, float | None]] = {m: {} for m in order}
    for i, a in enumerate(order):
        for b in order[i + 1 :]:
            out[a][b] = winner_share
            out[b][a] = 1.0 - winner_share
    return out

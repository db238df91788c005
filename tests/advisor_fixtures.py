"""Hand-made results.json dicts for the advisor tests: the fields the advisor reads set by each test,
every other field a results file must have filled with empty or neutral values."""

from __future__ import annotations

from typing import Any

from argus_eval.advisor import Advice, Constraints
from argus_eval.advisor import advise as advise_results
from argus_eval.results_model import results_from_data

RUN_WEIGHTS = {"P": 0.25, "CDC": 0.25, "RR": 0.25, "E": 0.25}
AXES = ("P", "CDC", "RR", "E", "ARGUS", "R")


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
        "raw": {**terms, "ARGUS": argus, "R": None},
        "undefined": {a: f"{a} undefined in this test" for a, v in terms.items() if v is None},
        "detail": detail,
        "intervals": {"ARGUS": None if interval is None else list(interval)},
        "retention": [],
        "severity_curves": {},
        "efficiency": None,
    }


def results(
    models: dict[str, dict[str, Any]],
    efficiency: dict[str, dict[str, Any] | None] | None = None,
    pairwise: dict[str, dict[str, float | None]] | None = None,
    resamples: int = 1000,
) -> dict[str, Any]:
    """A results.json dict; pairwise is the ARGUS share table pairwise[A][B] = P(A above B)."""
    names = sorted(models)
    return {
        "schema": "argus-eval/results/2",
        "axes": [{"name": a, "label": a, "description": a, "radar": a in RUN_WEIGHTS} for a in AXES],
        "models": models,
        "rankings": {
            "basis": "test",
            "capability": [],
            "overall": [],
            "pairwise": None if pairwise is None else {"ARGUS": pairwise, "P": {}},
        },
        "gap": {"sentence": None, "kendall_tau": None, "kendall_tau_interval": None, "rank_shift": {}},
        "comparison": {
            "method": "test",
            "claim_confidence": 0.95,
            "claims": [],
            "ties": [],
            "not_comparable": [],
            "head_to_head": {},
            "win_rate": {},
            "shared_parts": {},
        },
        "below_chance": [],
        "timing": None,
        "bootstrap": {"resamples": resamples, "seed": 0, "confidence": 0.95, "notes": []},
        "scoring_options": {
            "weights": dict(RUN_WEIGHTS),
            "claim_confidence": 0.95,
            "confidence": 0.95,
            "resamples": resamples,
            "seed": 0,
        },
        "reliance": {"scoring": "reported", "models": {}, "skipped": [], "notes": []},
        "scorecard_cells": [],
        "cells": [],
        "efficiency": efficiency if efficiency is not None else {m: None for m in names},
        "manifest": {
            "config": {},
            "seeds": {"run": 0, "bootstrap": 0},
            "versions": {},
            "git": {"revision": None, "dirty": None},
            "hardware": {},
            "models": {},
            "datasets": {},
            "protocols": [],
            "skipped": [],
            "not_applicable": [],
        },
        "notes": [],
    }


def scorecard_cell(model: str, task: str, dataset: str, score: float) -> dict[str, Any]:
    """A clean scorecard cell as results.json stores it."""
    return {
        "model": model,
        "task": task,
        "dataset": dataset,
        "condition": "clean",
        "score": score,
        "n_samples": 10,
        "n_dropped": 0,
        "interval": None,
        "chance": None,
    }


def shares(order: list[str], winner_share: float = 0.9) -> dict[str, dict[str, float | None]]:
    """A pairwise table in which each earlier model beats each later one in `winner_share` of resamples."""
    out: dict[str, dict[str, float | None]] = {m: {} for m in order}
    for i, a in enumerate(order):
        for b in order[i + 1 :]:
            out[a][b] = winner_share
            out[b][a] = 1.0 - winner_share
    return out


def advise(data: dict[str, Any], constraints: Constraints) -> Advice:
    """The advice on a hand-made results dict, loaded through the Results model as a file would be."""
    return advise_results(results_from_data(data), constraints)

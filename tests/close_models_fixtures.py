"""A hand-made run of five models whose figures crowd the charts: three share P, ARGUS and their
intervals exactly, a fourth differs by 0.003, and four share capability rank 1 and two overall rank 1.
The run comes from report_fixtures.make_run; the crowded figures are then written into its
results.json (and read back through the Results model, so the file stays valid)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from report_fixtures import ModelSpec, make_run

_EFF = {
    "latency_ms_p50": 20.0,
    "latency_ms_p95": 25.0,
    "throughput_per_s": 50.0,
    "peak_memory_mb": 800.0,
    "flops_per_sample": 90_000_000,
    "params": 200_000,
}
_SKILL = {"retrieval": 0.6, "captioning": 0.5, "reasoning": 0.6}

# name -> (P, ARGUS, capability rank, overall rank); the first three coincide.
CLOSE: dict[str, tuple[float, float, int, int]] = {
    "Gemma-3-4B-it": (0.612, 0.587, 1, 1),
    "LXMERT": (0.612, 0.587, 1, 1),
    "Qwen2.5-VL-3B-Instruct": (0.612, 0.587, 1, 2),
    "BLIP-2 OPT-2.7B": (0.615, 0.590, 1, 2),
    "CLIP ViT-B/32": (0.301, 0.498, 5, 2),
}


def close_models_run(run_dir: Path) -> Path:
    """Write the five-model run into run_dir; returns run_dir."""
    specs = [
        ModelSpec(name, dict(_SKILL), 0.1, efficiency={**_EFF, "latency_ms_p50": 20.0 + i * 0.1})
        for i, name in enumerate(CLOSE)
    ]
    make_run(run_dir, models=specs, hostile=False, failures=False)
    path = run_dir / "results.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    for name, (p, argus, cap_rank, ovr_rank) in CLOSE.items():
        row = data["models"][name]
        row["P"], row["ARGUS"] = p, argus
        row["intervals"]["P"] = [p - 0.02, p + 0.02]
        row["intervals"]["ARGUS"] = [argus - 0.03, argus + 0.03]
        for key, rank, value in (("capability", cap_rank, p), ("overall", ovr_rank, argus)):
            entry = next(e for e in data["rankings"][key] if e["model"] == name)
            entry["rank"], entry["value"] = rank, value
        data["gap"]["rank_shift"][name] = cap_rank - ovr_rank
    path.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    return run_dir

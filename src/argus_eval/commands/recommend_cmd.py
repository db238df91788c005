"""`argus recommend RUN_DIR`: a model choice under deployment constraints, from results.json alone."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from argus_eval.advisor import Advice, Constraints, advise, parse_weights
from argus_eval.advisor.constraints import parse_named
from argus_eval.results_model import load_results

NO_MODEL_EXIT = 1  # a valid answer ("nothing fits"), distinct from bad input (exit 2)


def _table(advice: Advice) -> Table:
    table = Table(title="candidates (est. = estimate, not a measurement)")
    floors = [a for a in advice.constraints.min_axes if a not in ("P", "RR")]  # axes given a floor
    for col in ("model", "score", "P", "RR", *floors, "latency ms", "memory GB", "excluded by"):
        table.add_column(col)

    def num(v: float | None, fmt: str = ".3f") -> str:
        return "-" if v is None else format(v, fmt)

    for c in sorted(advice.candidates, key=lambda c: advice.ranking.index(c.name) if c.eligible else 1e9):
        lat, mem = c.figures.latency_ms, c.figures.memory_gb
        table.add_row(
            c.name,
            num(c.score),
            num(c.p),
            num(c.axes.get("RR")),
            *(num(c.axes.get(a)) for a in floors),
            num(lat.value, ".1f") + (" est." if lat.source == "estimate" else ""),
            num(mem.value, ".2f") + (" est." if mem.source == "estimate" else ""),
            ", ".join(v.constraint for v in c.violations),
        )
    return table


def recommend_command(
    run_dir: Path,
    console: Console,
    *,
    device: str | None = None,
    max_latency_ms: float | None = None,
    max_memory_gb: float | None = None,
    min_rr: float | None = None,
    weights: str | None = None,
    task: str | None = None,
    as_json: bool = False,
    min_axes: list[str] | None = None,
) -> int:
    """Print the advice; returns the exit status (0 with a recommendation, NO_MODEL_EXIT without).
    min_axes: "AXIS=VALUE" floors on any axis of the run (the --min option, repeatable)."""
    floors = parse_named(",".join(min_axes), "--min") if min_axes else {}
    constraints = Constraints(
        label=device or "the run's hardware",
        device=device,
        max_latency_ms=max_latency_ms,
        max_memory_gb=max_memory_gb,
        min_rr=min_rr,
        weights=None if weights is None else parse_weights(weights),
        task=task,
        min_axes=floors,
    )
    advice = advise(load_results(run_dir / "results.json"), constraints)
    if as_json:
        sys.stdout.write(json.dumps(advice.to_json(), indent=1, sort_keys=True) + "\n")
    else:
        console.print(_table(advice))
        for s in advice.sentences:
            console.print(s, highlight=False)
        for n in advice.notes:
            console.print(f"[dim]note: {n}[/]", highlight=False)
    return 0 if advice.winner is not None else NO_MODEL_EXIT

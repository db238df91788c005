"""`argus profile --size-only`: what a person reads of a model sized from its config
(runner/plan/sizing.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from argus_eval.runner.plan.sizing import SizeReport


def size_report(
    spec: str,
    task_entries: Sequence[str | dict[str, Any]],
    dtype: str | None,
    devices: Sequence[str] | None,
    max_new_tokens: int | None,
) -> SizeReport:
    """Size spec for the tasks given as config entries (names or {name: ..., options})."""
    from argus_eval.efficiency.devices import get_device
    from argus_eval.runner.plan.sizing import size_model
    from argus_eval.tasks.registry import make_tasks, parse_tasks

    for d in devices or ():
        get_device(d)  # an unknown name fails here, listing the valid ones
    tasks = make_tasks(parse_tasks(list(task_entries)))
    return size_model(spec, tasks, dtype=dtype, devices=devices, max_new_tokens=max_new_tokens)


def print_size(reports: Sequence[SizeReport], as_json: bool, console: Console) -> None:
    """One report: its JSON (several, e.g. a composite's checkpoints: a list), or tables."""
    if as_json:
        shown: Any = reports[0].to_json() if len(reports) == 1 else [r.to_json() for r in reports]
        sys.stdout.write(json.dumps(shown, indent=1, sort_keys=True) + "\n")
        return
    for r in reports:
        _print_one(r, console)


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def _print_one(r: SizeReport, console: Console) -> None:
    w = r.weight_bytes
    console.print(f"size of {r.spec}: {r.architecture} ({r.family}), config {r.source}", highlight=False)
    console.print(
        f"parameters: {r.params:,}; weights: float32 {_mb(w['float32'])}, float16/bfloat16 "
        f"{_mb(w['float16'])}; projected in {r.dtype}",
        highlight=False,
    )
    work = Table(title="reference sample per task (FLOPs = 2 x multiply-accumulates)")
    for col in ("task", "protocol", "new tokens", "FLOPs/sample", "passes", "weights read"):
        work.add_column(col, justify="left" if col in ("task", "protocol") else "right")
    lines = []
    for t in r.tasks:
        if t.work is None:
            work.add_row(t.task, t.protocol or "-", "-", "n/a", "-", "-")
            lines.append(f"{t.task}: no FLOP count: {t.reason}")
            continue
        work.add_row(
            t.task,
            t.protocol or "-",
            "-" if t.new_tokens is None else str(t.new_tokens),
            f"{t.work.flops / 1e9:,.2f} G",
            str(len(t.work.passes)),
            _mb(t.work.weight_bytes),
        )
        lines.append(f"{t.task}: one sample is {t.inputs}")
    console.print(work)
    for line in lines:
        console.print(line, highlight=False)
    counted = [t for t in r.tasks if t.work is not None]
    if not counted:
        return
    proj = Table(title=f"roofline projections at batch 1, {r.dtype} (estimates: lower bounds)")
    proj.add_column("device")
    proj.add_column("weights fit")
    proj.add_column("peak used")  # the dtype's: Tensor Core where the device has them
    for t in counted:
        proj.add_column(f"{t.task} (ms)", justify="right")
    notes: dict[str, str] = {}  # device -> why its peak is not the dtype's own
    for i, first in enumerate(counted[0].projections):
        cells = [f"{t.projections[i]['latency_ms']:,.2f}" for t in counted]
        memory = first["device_memory_bytes"]
        size = f"{memory / 1e9:g} GB" if isinstance(memory, (int, float)) else "too small"
        fits = "yes" if first["fits_in_memory"] else f"no ({size})"
        peak = str(first["peak_basis"])
        proj.add_row(str(first["device"]), fits, peak, *cells)
        if first.get("note"):
            notes[str(first["device"])] = str(first["note"])
    console.print(proj)
    for note in notes.values():
        console.print(note, highlight=False)

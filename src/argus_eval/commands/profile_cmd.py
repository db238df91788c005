"""`argus profile --model SPEC`: latency, throughput, peak memory, FLOPs and params of one model.

SPEC may also name a model of the config (or of the default suite), composite ones included: a
composite is profiled on each task's checkpoint (or on the one serving --task)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

PROFILED = "profiled"


def _model_entry(spec: str, models: list[dict[str, Any]], device: str, batch_size: int) -> dict[str, Any]:
    """The model entry to profile: the config's model named spec (device and batch size from the command
    line, for every task's checkpoint), else spec itself as a single checkpoint."""
    named = next((m for m in models if m.get("name") == spec), None)
    if named is None:
        return {"name": PROFILED, "spec": spec, "device": device, "batch_size": batch_size}
    entry = {**named, "name": PROFILED, "device": device, "batch_size": batch_size}
    if "tasks" in entry:
        drop = {"device", "batch_size"}
        entry["tasks"] = {t: {k: v for k, v in c.items() if k not in drop} for t, c in entry["tasks"].items()}
    return entry


def _profile_task(data: dict[str, Any], task: str, label: str, source: str) -> dict[str, Any]:
    """Figures of the config's model on the first clean cell of task, with what they were measured on."""
    import tempfile

    from argus_eval.errors import CapabilityError, SampleError
    from argus_eval.models.loading import load_model
    from argus_eval.models.secrets import redact_text
    from argus_eval.runner.config import parse_config
    from argus_eval.runner.local import ModelPool
    from argus_eval.runner.pipeline import plan_run
    from argus_eval.runner.profiling import profile_plan
    from argus_eval.runner.store import Store

    cfg = parse_config({**data, "tasks": [task]}, source)
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "store.sqlite") as store:
        pool = ModelPool(load_model)
        try:
            plan = plan_run(cfg, store, pool)
            cell = next((c for c in plan.cells if c.condition.kind == "clean"), None)
            if cell is None:
                reasons = "; ".join(s["reason"] for s in plan.skipped) or "no samples"
                raise CapabilityError(f"model {label!r} cannot run task {task!r}: {reasons}")
            profiles = profile_plan(plan, store, pool, cfg)
        finally:
            pool.close()
    profile = profiles.summaries.get(PROFILED)
    if profile is None:
        why = profiles.undefined.get(PROFILED) or "; ".join(profiles.left_out.values()) or "no sample"
        raise SampleError(f"could not profile {label!r} on {task}: {why}")
    out = profile.to_json()
    timing = profiles.timings.get((PROFILED, cell.task.name))
    if timing is not None:
        out["trials"] = timing.to_json()["trials"]
        out["latency_spread"] = timing.spread()
        out["memory_basis"] = timing.memory_basis
    out["measured_on"] = {
        "task": cell.task.name,
        "protocol": cell.protocol.name,
        "dataset": cell.dataset.name,
        "checkpoint": redact_text(cell.model.spec),
    }
    return out


def profile_command(
    spec: str,
    task: str | None,
    config: Path | None,
    batch_size: int,
    device: str,
    as_json: bool,
    console: Console,
) -> None:
    """Profile a model on the first clean cell of `task` over the config's datasets (default suite); a
    composite model without `task` on each of its tasks, each on the checkpoint serving it."""
    from argus_eval.runner.config import default_config_path, load_config

    base = load_config(config) if config is not None else None
    suite = base if base is not None else load_config(default_config_path())
    data = {} if base is None else base.written.model_dump(mode="json")
    entry = _model_entry(spec, suite.written.model_dump(mode="json")["models"], device, batch_size)
    data.update(
        {
            "models": [entry],
            "perturbations": [],
            # the config's timing settings (trials, repeats, warmup, threads), at this batch size
            "efficiency": {**data.get("efficiency", {}), "enabled": True, "batch_size": batch_size},
        }
    )
    if base is None:
        data["datasets"] = suite.written.datasets[:1]
    tasks = [task] if task is not None else list(entry.get("tasks", ["retrieval"]))
    source = str(config or "argus profile")
    outs = {t: _profile_task(data, t, spec, source) for t in tasks}
    if as_json:
        # one task: its figures, as always; a composite's tasks: task -> figures
        shown: dict[str, Any] = outs[tasks[0]] if len(tasks) == 1 else outs
        sys.stdout.write(json.dumps(shown, indent=1, sort_keys=True) + "\n")
        return
    for out in outs.values():
        console.print(_table(spec, out))
    first = next(iter(outs.values()))
    console.print(
        f"hardware: {first['fingerprint'].get('cpu')} / {first['fingerprint'].get('gpu')}", highlight=False
    )


def _table(spec: str, out: dict[str, Any]) -> Table:
    from argus_eval.efficiency.record import FIELDS

    on = out["measured_on"]
    what = spec if on["checkpoint"] == spec else f"{spec} ({on['checkpoint']})"
    table = Table(title=f"efficiency of {what} ({on['task']} via {on['protocol']})")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for k in FIELDS:
        v = out[k]
        table.add_row(k, "n/a" if v is None else (f"{v:,.3f}" if isinstance(v, float) else f"{v:,}"))
    return table

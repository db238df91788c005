"""`argus profile --model SPEC`: latency, throughput, peak memory, FLOPs and params of one model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table


def profile_command(
    spec: str, task: str, config: Path | None, batch_size: int, device: str, as_json: bool, console: Console
) -> None:
    """Profile a model on the first clean cell of `task` over the config's datasets (default suite)."""
    from argus_eval.efficiency.record import FIELDS
    from argus_eval.runner.config import default_config_path, load_config, parse_config
    from argus_eval.runner.local import ModelPool
    from argus_eval.runner.pipeline import plan_run
    from argus_eval.runner.profiling import profile_plan
    from argus_eval.runner.store import Store

    base = load_config(config) if config is not None else None
    data = {} if base is None else base.written.model_dump(mode="json")
    data.update(
        {
            "models": [{"name": "profiled", "spec": spec, "device": device, "batch_size": batch_size}],
            "tasks": [task],
            "perturbations": [],
            "efficiency": {"enabled": True, "batch_size": batch_size},
        }
    )
    if base is None:
        data["datasets"] = load_config(default_config_path()).written.datasets[:1]
    cfg = parse_config(data, str(config or "argus profile"))
    import tempfile

    from argus_eval.models.loading import load_model

    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "store.sqlite") as store:
        pool = ModelPool(load_model)
        try:
            plan = plan_run(cfg, store, pool)
            cell = next((c for c in plan.cells if c.condition.kind == "clean"), None)
            if cell is None:
                from argus_eval.errors import CapabilityError

                reasons = "; ".join(s["reason"] for s in plan.skipped) or "no samples"
                raise CapabilityError(f"model {spec!r} cannot run task {task!r}: {reasons}")
            profiles = profile_plan(plan, store, pool, cfg)
        finally:
            pool.close()
    profile = profiles.summaries.get("profiled")
    if profile is None:
        from argus_eval.errors import SampleError

        why = profiles.undefined.get("profiled") or "; ".join(profiles.left_out.values()) or "no sample"
        raise SampleError(f"could not profile {spec!r}: {why}")
    out = profile.to_json()
    timing = profiles.timings.get(("profiled", cell.task.name))
    if timing is not None:
        out["trials"] = timing.to_json()["trials"]
        out["latency_spread"] = timing.spread()
        out["memory_basis"] = timing.memory_basis
    out["measured_on"] = {
        "task": cell.task.name,
        "protocol": cell.protocol.name,
        "dataset": cell.dataset.name,
    }
    if as_json:
        sys.stdout.write(json.dumps(out, indent=1, sort_keys=True) + "\n")
        return
    table = Table(title=f"efficiency of {spec} ({cell.task.name} via {cell.protocol.name})")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for k in FIELDS:
        v = out[k]
        table.add_row(k, "n/a" if v is None else (f"{v:,.3f}" if isinstance(v, float) else f"{v:,}"))
    console.print(table)
    console.print(
        f"hardware: {out['fingerprint'].get('cpu')} / {out['fingerprint'].get('gpu')}", highlight=False
    )

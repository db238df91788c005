"""`argus profile --model SPEC`: latency, throughput, peak memory, FLOPs and params of one model.

SPEC may also name a model of the config (or of the default suite), composite ones included: a
composite is profiled on each task's checkpoint (or on the one serving --task). --size-only sizes it
from its config.json on the meta device instead (size_cmd.py)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

PROFILED = "profiled"


@dataclass(frozen=True)
class ProfileSettings:
    """The command line's settings: the model's batch size, device, dtype and generation cap (None: the
    entry's), the timing settings (None: the config's efficiency section), and size-only's options."""

    batch_size: int = 32
    device: str = "auto"
    dtype: str | None = None
    trials: int | None = None
    repeats: int | None = None
    warmup: int | None = None
    max_new_tokens: int | None = None
    size_only: bool = False
    project_on: tuple[str, ...] = ()

    def model_settings(self) -> dict[str, Any]:
        """What the command line sets on the model entry (and on each of a composite's checkpoints)."""
        out: dict[str, Any] = {"device": self.device, "batch_size": self.batch_size}
        out.update({k: v for k, v in (("dtype", self.dtype), ("max_new_tokens", self.max_new_tokens)) if v})
        return out

    def timing(self) -> dict[str, int]:
        """The efficiency settings the command line overrides."""
        given = {"trials": self.trials, "repeats": self.repeats, "warmup": self.warmup}
        return {k: v for k, v in given.items() if v is not None}


def _model_entry(spec: str, models: list[dict[str, Any]], settings: dict[str, Any]) -> dict[str, Any]:
    """The model entry to profile: the config's model named spec (the command line's settings for
    every task's checkpoint), else spec itself as a single checkpoint."""
    named = next((m for m in models if m.get("name") == spec), None)
    if named is None:
        return {"name": PROFILED, "spec": spec, **settings}
    entry = {**named, "name": PROFILED, **settings}
    if "tasks" in entry:
        entry["tasks"] = {
            t: {k: v for k, v in c.items() if k not in settings} for t, c in entry["tasks"].items()
        }
    return entry


def _cannot_run(
    label: str, task: str, not_run: list[dict[str, Any]], skipped: list[dict[str, str]]
) -> Exception:
    """Why the model has no clean cell of task: the checkpoint's load failure (ModelLoadError, its reason
    as the loader gave it), else the pairs left out, else no samples."""
    from argus_eval.errors import CapabilityError, ModelLoadError

    loads = list(dict.fromkeys(str(r["reason"]) for r in not_run))
    if loads:
        return ModelLoadError(f"model {label!r} could not be profiled on {task}: {'; '.join(loads)}")
    reasons = "; ".join(dict.fromkeys(s["reason"] for s in skipped)) or "no samples"
    return CapabilityError(f"model {label!r} cannot run task {task!r}: {reasons}")


def _profile_task(data: dict[str, Any], task: str, label: str, source: str) -> dict[str, Any]:
    """Figures of the config's model on the first clean cell of task, with what they were measured on."""
    import tempfile

    from argus_eval.errors import SampleError
    from argus_eval.models.loading import load_model
    from argus_eval.models.secrets import redact_text
    from argus_eval.perturb.conditions import CLEAN
    from argus_eval.runner.config import parse_config
    from argus_eval.runner.execute.pool import ModelPool
    from argus_eval.runner.plan.planning import plan_run
    from argus_eval.runner.score.results import projections
    from argus_eval.runner.store import Store
    from argus_eval.runner.timing.profiling import profile_plan

    cfg = parse_config({**data, "tasks": [task]}, source)
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "store.sqlite") as store:
        pool = ModelPool(load_model)
        try:
            plan = plan_run(cfg, store, pool)
            cell = next((c for c in plan.cells if c.condition == CLEAN), None)
            if cell is None:
                raise _cannot_run(label, task, plan.not_run, plan.skipped)
            profiles = profile_plan(plan, store, pool, cfg)
        finally:
            pool.close()
    profile = profiles.summaries.get(PROFILED)
    if profile is None:
        why = profiles.undefined.get(PROFILED) or "; ".join(profiles.left_out.values()) or "no sample"
        raise SampleError(f"could not profile {label!r} on {task}: {why}")
    out = profile.to_json()
    out["projections"] = [q.model_dump(mode="json") for q in projections(profile)]
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
    settings: ProfileSettings,
    as_json: bool,
    console: Console,
) -> None:
    """Profile a model on the first clean cell of `task` over the config's datasets (default suite); a
    composite model without `task` on each of its tasks, each on the checkpoint serving it. size_only:
    size it from its config instead (no weights, no data)."""
    from argus_eval.runner.config import default_config_path, load_config

    base = load_config(config) if config is not None else None
    suite = base if base is not None else load_config(default_config_path())
    data = {} if base is None else base.written.model_dump(mode="json")
    entry = _model_entry(spec, suite.written.model_dump(mode="json")["models"], settings.model_settings())
    if settings.size_only:
        _size_only(entry, task, data.get("tasks"), settings, as_json, console)
        return
    data.update(
        {
            "models": [entry],
            "perturbations": [],
            # the config's timing settings (trials, repeats, warmup, threads), at this batch size, with
            # the command line's trials, repeats and warm-up over them
            "efficiency": {
                **data.get("efficiency", {}),
                "enabled": True,
                "batch_size": settings.batch_size,
                **settings.timing(),
                # one model is its own best: its E interval is always narrow, so run every trial asked
                "max_e_width": None,
            },
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
        console.print(_projection_table(out))
        for q in out["projections"]:
            if q.get("note"):
                console.print(f"{q['device']}: {q['note']}", highlight=False)
    first = next(iter(outs.values()))
    console.print(
        f"hardware: {first['fingerprint'].get('cpu')} / {first['fingerprint'].get('gpu')}", highlight=False
    )


def _size_only(
    entry: dict[str, Any],
    task: str | None,
    config_tasks: list[Any] | None,
    settings: ProfileSettings,
    as_json: bool,
    console: Console,
) -> None:
    """Size the entry's checkpoint (a composite: each task's) for --task, else the config's tasks, else
    every built-in task at its default options."""
    from argus_eval.commands.size_cmd import print_size, size_report
    from argus_eval.tasks.base import TASKS

    entries: list[Any] = config_tasks or list(TASKS.registered())
    if task is not None:
        entries = [e for e in entries if (e if isinstance(e, str) else e.get("name")) == task] or [task]
    dtype = None if settings.dtype in (None, "auto") else settings.dtype
    devices = settings.project_on or None
    if "tasks" in entry:  # a composite: each task on the checkpoint serving it
        per_task = {t: c if isinstance(c, str) else c["spec"] for t, c in entry["tasks"].items()}
        picked = [e for e in entries if (e if isinstance(e, str) else e.get("name")) in per_task]
        reports = [
            size_report(per_task[e if isinstance(e, str) else e["name"]], [e], dtype, devices,
                        settings.max_new_tokens)
            for e in picked
        ]  # fmt: skip
    else:
        reports = [size_report(str(entry["spec"]), entries, dtype, devices, settings.max_new_tokens)]
    print_size(reports, as_json, console)


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


def _projection_table(out: dict[str, Any]) -> Table:
    """The roofline projections of the profile (sum over passes of max(FLOPs/peak, bytes/bandwidth))."""
    table = Table(title="roofline projections at batch 1 (estimates: lower bounds; FLOPs = 2 x MACs)")
    for col in ("device", "latency (ms)", "bound", "passes", "peak used"):
        table.add_column(col, justify="right" if col in ("latency (ms)", "passes") else "left")
    for q in out["projections"]:
        lat = "n/a" if q["latency_ms"] is None else f"{q['latency_ms']:.4g}"
        table.add_row(q["device"], lat, q["bound"] or "-", str(q["passes"]), q["peak_basis"] or "-")
    return table

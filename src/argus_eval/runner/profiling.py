"""Efficiency profiling inside a run: one profile per model, measured once and kept in the store.

A profile is keyed by model fingerprint, hardware fingerprint and settings, so a rerun on the same
machine reuses it (no model call) and figures from different hardware never mix.
"""

from __future__ import annotations

from functools import partial

from argus_eval.data.types import fingerprint_of
from argus_eval.efficiency.fingerprint import hardware_fingerprint
from argus_eval.efficiency.profile import measure
from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.errors import SampleError
from argus_eval.models.protocols import Model
from argus_eval.models.spec import ModelConfig
from argus_eval.perturb.conditions import CLEAN
from argus_eval.runner.config import RunConfig
from argus_eval.runner.gallery import with_gallery
from argus_eval.runner.local import ModelPool
from argus_eval.runner.plan import Cell, Plan
from argus_eval.runner.prepare import prepare
from argus_eval.runner.store import Store
from argus_eval.tasks.base import Prepared


def _probe_inputs(cell: Cell, n: int, seed: int) -> list[Prepared]:
    """The first n decodable samples of a cell, cycled to fill n (fixed, so figures are comparable)."""
    ready: list[Prepared] = []
    for s in cell.samples:
        try:
            ready.append(prepare(s, cell.dataset, CLEAN, seed))
        except SampleError:
            continue
        if len(ready) >= n:
            break
    if not ready:
        return []
    ready = with_gallery(cell, ready, seed)  # the profiled cell is clean
    return [ready[i % len(ready)] for i in range(n)]


def profile_key(cell: Cell, cfg: RunConfig) -> str:
    hw = hardware_fingerprint(cell.model.device, cell.model.dtype)
    return fingerprint_of(
        "profile", cell.model_fp, hw, cfg.efficiency.model_dump(), cell.task.name, cell.protocol.name
    )


def profile_cell(plan: Plan, model_cfg: ModelConfig) -> Cell | None:
    """The cell a model is profiled on: its first clean cell served by a native protocol (what the model
    is built for, so figures compare like with like), else its first clean cell."""
    clean = [c for c in plan.cells if c.model.name == model_cfg.name and c.condition.kind == "clean"]
    return next((c for c in clean if c.protocol.native), clean[0] if clean else None)


def measure_model(model: Model, cell: Cell, store: Store, cfg: RunConfig) -> EfficiencyProfile | None:
    """Measure one loaded model on its profiling cell and keep the profile in the store."""
    eff = cfg.efficiency
    inputs = _probe_inputs(cell, eff.batch_size, cfg.seed)
    if not inputs:
        return None

    def run_batch(n: int) -> None:
        cell.task.infer(model, cell.protocol, inputs[:n], cell.dataset)

    profile = measure(
        run_batch,
        batch_size=eff.batch_size,
        device=model.info.device,
        warmup=eff.warmup,
        repeats=eff.repeats,
        flops_fn=partial(run_batch, 1),
        params=model.info.params,
        dtype=model.info.dtype,
    )
    data = profile.to_json()
    data["measured_on"] = {"task": cell.task.name, "protocol": cell.protocol.name}
    store.put_profile(profile_key(cell, cfg), data)
    return profile


def profile_plan(
    plan: Plan, store: Store, pool: ModelPool, cfg: RunConfig
) -> dict[str, EfficiencyProfile | None]:
    """Every model's profile: from the store when measured before on this hardware, else measured now."""
    out: dict[str, EfficiencyProfile | None] = {}
    for model_cfg in cfg.models:
        cell = profile_cell(plan, model_cfg)
        if cell is None:
            out[model_cfg.name] = None
            continue
        cached = store.get_profile(profile_key(cell, cfg))
        if cached is not None:
            out[model_cfg.name] = EfficiencyProfile.from_json(cached)
            continue
        out[model_cfg.name] = measure_model(pool.get(model_cfg), cell, store, cfg)
        pool.release(model_cfg.name)
    return out

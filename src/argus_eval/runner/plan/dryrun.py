"""`argus run --dry-run`: the plan of a config, with protocols, without running any model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from argus_eval.errors import ArgusError, UnknownNameError
from argus_eval.models.loading import declared_info, is_served, load_model
from argus_eval.models.protocols import ModelInfo
from argus_eval.models.secrets import redact_text
from argus_eval.models.spec import ModelConfig
from argus_eval.runner.config import RunSpec
from argus_eval.runner.plan.baselines import baseline_rows
from argus_eval.runner.plan.datasets import load_datasets
from argus_eval.runner.plan.dryrun_cost import RunCost, run_cost
from argus_eval.runner.plan.plan import Plan, build_plan
from argus_eval.tasks.registry import make_tasks


def _declared_info(cfg: ModelConfig) -> ModelInfo:
    """What the spec's scheme declares without loading (a preset's row of the preset table); else load
    the (local) model. A spec whose scheme is unknown is loaded, so its error is load_model's."""
    with cfg.located():
        try:
            declared = declared_info(cfg)
        except UnknownNameError:
            declared = None
        if declared is not None:
            return declared
        model = load_model(cfg)
    try:
        return model.info
    finally:
        model.close()


def _regions_of(info: ModelInfo | None) -> str | None:
    """The region features a model reads (LXMERT): its provider's kind, or the declared source."""
    regions = info.extra.get("regions") if info is not None else None
    if isinstance(regions, dict):
        return str(regions.get("kind", "?"))
    return str(regions) if regions else None


def _tasks_of(checkpoint: ModelConfig, models: Sequence[ModelConfig]) -> dict[str, str]:
    """{"task": ...} naming the tasks a composite model maps to this checkpoint; {} for a single spec."""
    key = checkpoint.load_key()
    for row in models:
        served = [t for t, c in row.checkpoints().items() if c.load_key() == key]
        if served:
            return {"task": ", ".join(served)}
    return {}


def leave_out_lacking(plan: Plan) -> None:
    """Leave out, naming why, the cells the run would leave out on meeting them: those whose protocol
    gets no input from their dataset (ProtocolChoice.lacks: a caption bank, candidate answers)."""
    asked: dict[tuple[int, str, int, str], str | None] = {}  # a row's conditions share its samples
    for c in list(plan.cells):
        lacks = c.protocol.lacks
        if lacks is None:
            continue
        key = (id(c.protocol), c.dataset.name, id(c.samples), c.model.name)
        if key not in asked:
            asked[key] = lacks(c.dataset, c.samples, c.model.name)
        why = asked[key]
        if why is not None:
            plan.leave_out(c, why)


def describe_plan(
    cfg: RunSpec,
) -> tuple[list[dict[str, Any]], list[dict[str, str]], list[dict[str, str]], RunCost]:
    """Rows (model, task, dataset, conditions, samples, protocol, model calls per cell and in all),
    the pairs left out with reasons, the blind baseline's source (or its absence) per dataset, and what
    the run will cost (runner/plan/dryrun_cost.py)."""
    datasets = load_datasets(cfg)
    tasks = make_tasks(cfg.tasks)
    conditions = list(cfg.conditions)
    infos: dict[str, ModelInfo | None] = {}  # ModelConfig.load_key -> declared info (None: unusable)
    skipped: list[dict[str, str]] = []

    def info(m: ModelConfig) -> ModelInfo | None:
        key = m.load_key()
        if key not in infos:
            try:
                infos[key] = _declared_info(m)
            except ArgusError as e:  # named once; a composite's other checkpoints still plan
                infos[key] = None
                reason = redact_text(str(e))  # an invalid spec's message may quote its URL's password
                skipped.append({"model": m.name, **_tasks_of(m, cfg.models), "reason": reason})
        return infos[key]

    # a first stage that cannot serve fails the dry run as it fails the run (a ConfigError naming it)
    plan = build_plan(
        cfg.models, lambda m: "-", info, tasks, datasets, conditions, helper_infos=_declared_info
    )
    leave_out_lacking(plan)
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for c in plan.cells:
        key = (c.model.name, c.task.name, c.dataset.name)
        # the protocol's own cost: pairs scored, texts and images embedded, samples answered
        calls = c.protocol.cost(c.samples)
        row = rows.setdefault(
            key,
            {
                "model": key[0],
                "task": key[1],
                "checkpoint": redact_text(c.model.spec),
                "dataset": key[2],
                "conditions": 0,
                "samples": len(c.samples),
                "protocol": c.protocol.name + ("" if c.protocol.native else " (substitute)"),
                "regions": _regions_of(infos.get(c.model.load_key())),
                "calls_per_cell": calls,
                "calls": 0,
            },
        )
        row["conditions"] += 1
        row["calls"] += calls
    # the tasks whose options name a judge (plan.judges is filled by the run's planning, not build_plan)
    judged = {t.name for t in cfg.tasks if getattr(t, "judge", None) is not None}
    cost = run_cost(
        plan.cells,
        is_served,
        judged,
        lambda m: _regions_of(infos.get(m.load_key())) is not None,
    )
    return list(rows.values()), skipped + plan.skipped, baseline_rows(datasets, tasks), cost

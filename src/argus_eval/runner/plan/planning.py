"""Planning a run against its store: each model's info (from the store when a run recorded it, else
loaded once), its fingerprint, the plan with what could not load, and the check that something runs."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict

from argus_eval.errors import ConfigError
from argus_eval.models.loading import model_fingerprint
from argus_eval.models.protocols import ModelInfo
from argus_eval.models.secrets import redact, redact_text
from argus_eval.models.spec import ModelConfig
from argus_eval.runner.config import RunSpec
from argus_eval.runner.execute.pool import LOAD_ERRORS, ModelPool
from argus_eval.runner.judge.judging import judge_setups
from argus_eval.runner.plan.datasets import load_datasets
from argus_eval.runner.plan.plan import Plan, build_plan
from argus_eval.runner.store import Store
from argus_eval.tasks.registry import make_tasks

# the key path a located load error starts with ("models[0].spec", "models[1].tasks.reasoning.spec")
_KEY = re.compile(r"(models\[\d+\][\w.\[\]]*)")


def _info_json(info: ModelInfo) -> str:
    d = asdict(info)
    d["capabilities"] = sorted(info.capabilities)
    return json.dumps(redact(d), sort_keys=True, default=str)  # the store is an output file too


def _info_from_json(text: str) -> ModelInfo:
    d = json.loads(text)
    d["capabilities"] = frozenset(d["capabilities"])
    return ModelInfo(**d)


def model_infos(store: Store, pool: ModelPool) -> Callable[[ModelConfig, str], ModelInfo]:
    """ModelInfo from the store when a previous run recorded it; else load the model once to learn it."""

    def get(cfg: ModelConfig, fp: str) -> ModelInfo:
        key = f"model_info:{fp}:{cfg.name}"
        cached = store.get_meta(key)
        if cached is not None:
            return _info_from_json(cached)
        info = pool.get(cfg).info
        store.set_meta(key, _info_json(info))
        return info

    return get


def plan_run(cfg: RunSpec, store: Store, pool: ModelPool, strict: bool = False) -> Plan:
    """The run's plan. A checkpoint that cannot load (or be fingerprinted) is named with the reason in
    plan.not_loaded and its cells in plan.not_run, and the others are planned; with strict it is fatal."""
    datasets = load_datasets(cfg)
    tasks = make_tasks(cfg.tasks)
    conditions = list(cfg.conditions)
    fps: dict[str, str] = {}  # ModelConfig.load_key -> fingerprint, each checkpoint hashed once
    failed: dict[str, str] = {}  # ModelConfig.load_key -> why it cannot load (filled while planning)
    not_loaded: list[dict[str, str]] = []

    def fingerprint(m: ModelConfig) -> str:
        key = m.load_key()
        if key not in fps:
            with m.located():
                fps[key] = model_fingerprint(m)
        return fps[key]

    infos = model_infos(store, pool)

    def info(m: ModelConfig) -> ModelInfo | None:
        key = m.load_key()
        if key not in failed:
            try:
                return infos(m, fingerprint(m))
            except LOAD_ERRORS as e:
                if strict:
                    raise
                failed[key] = redact_text(str(e))  # a loader's message may quote a URL's credentials
        entry = {"model": m.name, "checkpoint": redact_text(m.spec), "reason": failed[key]}
        if entry not in not_loaded:
            not_loaded.append(entry)
        return None

    plan = build_plan(cfg.models, fingerprint, info, tasks, datasets, conditions, unavailable=failed)
    plan.not_loaded = not_loaded
    plan.judges = judge_setups(cfg.tasks, fingerprint)
    return plan


def require_cells(plan: Plan) -> None:
    """A plan with no cell would print an empty scorecard: say why instead (ConfigError)."""
    if plan.cells:
        return
    why = [f"{e['model']} could not load ({e['reason']})" for e in plan.not_loaded]
    why += [f"task {e['task']} has no samples in dataset {e['dataset']}" for e in plan.not_applicable]
    why += [f"{e['model']} cannot run {e['task']} ({e['reason']})" for e in plan.skipped]
    if plan.not_loaded and not plan.not_applicable and not plan.skipped:
        # every model failed to load: the fix is in their specs, whose key paths lead each reason
        keys = sorted({m.group(1) for e in plan.not_loaded if (m := _KEY.match(e["reason"]))})
        where = ", ".join(keys) or "models[*].spec"
        fix = f"; no model could load: fix the model spec(s) at {where} in the config"
    else:
        fix = "; check the config's tasks and dataset options (e.g. questions_per_image)"
    raise ConfigError(
        "nothing to evaluate: " + ("; ".join(why) or "no model, task and dataset combine") + fix
    )

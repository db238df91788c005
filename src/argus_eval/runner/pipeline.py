"""One evaluation end to end: config -> plan -> execute -> store -> score -> results and report."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from argus_eval.data.atomic import atomic_write_text
from argus_eval.errors import ConfigError
from argus_eval.metrics.meteor_remote import meteor_events
from argus_eval.models.loading import load_model, model_fingerprint
from argus_eval.models.protocols import Model, ModelInfo
from argus_eval.models.secrets import redact, redact_text
from argus_eval.models.spec import ModelConfig
from argus_eval.registry import Registry
from argus_eval.results_model import Results, results_text
from argus_eval.runner.config import RunSpec
from argus_eval.runner.execute.execution import ExecutionRequest
from argus_eval.runner.execute.executors import EXECUTORS
from argus_eval.runner.execute.local import LOAD_ERRORS, PARK_BYTES, ExecStats, ModelPool
from argus_eval.runner.gc_pause import building_long_lived, thawed_after
from argus_eval.runner.judge.judge_results import judges_block
from argus_eval.runner.judge.judging import JudgeStats, judge_plan, judge_setups
from argus_eval.runner.plan.datasets import load_datasets
from argus_eval.runner.plan.plan import Plan, build_plan
from argus_eval.runner.score.results import build_results, timing_block
from argus_eval.runner.score.score import keep_scored, rejected_parts, score_cells, write_samples
from argus_eval.runner.store import Store
from argus_eval.runner.threads import plan_threads, using
from argus_eval.runner.timing.profiling import Profiles, profile_plan
from argus_eval.runner.write.manifest import git_revision, hardware, out_dir_entry, package_versions
from argus_eval.runner.write.outputs import prepare_out_dir, writing
from argus_eval.runner.write.skipped import skip_notes, write_skipped
from argus_eval.tasks.registry import make_tasks


@dataclass
class RunOutcome:
    """What a run produced and did (for the CLI's table and counters)."""

    out_dir: Path
    results: Results  # results.json as written (results_json() gives its plain JSON)
    stats: ExecStats
    plan: Plan
    samples_written: int


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


def models_manifest(models: Sequence[ModelConfig], plan: Plan) -> dict[str, Any]:
    """The manifest's models: spec and fingerprint of each model that ran; for a composite, of the
    checkpoint serving each of its tasks."""
    out: dict[str, Any] = {}
    composite = {m.name for m in models if m.composite}
    for c in plan.cells:
        entry = {"spec": redact_text(c.model.spec), "fingerprint": c.model_fp}
        if c.model.name in composite:
            out.setdefault(c.model.name, {"tasks": {}})["tasks"][c.task.name] = entry
        else:
            out[c.model.name] = entry
    return out


def require_cells(plan: Plan) -> None:
    """A plan with no cell would print an empty scorecard: say why instead (ConfigError)."""
    if plan.cells:
        return
    why = [f"{e['model']} could not load ({e['reason']})" for e in plan.not_loaded]
    why += [f"task {e['task']} has no samples in dataset {e['dataset']}" for e in plan.not_applicable]
    why += [f"{e['model']} cannot run {e['task']} ({e['reason']})" for e in plan.skipped]
    raise ConfigError(
        "nothing to evaluate: "
        + ("; ".join(why) or "no model, task and dataset combine")
        + "; check the config's tasks and dataset options (e.g. questions_per_image)"
    )


@Registry.frozen_for_run()  # a fresh context per call (contextlib recreates it), nest-safe
def run(
    cfg: RunSpec,
    out_dir: Path,
    *,
    strict: bool = False,
    quiet: bool = False,
    loader: Callable[[ModelConfig], Model] = load_model,
    retry_failed: bool = True,
    reports: Callable[[Path], None] | None = None,
) -> RunOutcome:
    """Run (or resume) an evaluation into out_dir and write results.json and samples.jsonl.

    Failed records of an earlier run are computed again unless retry_failed is False. reports(out_dir)
    writes what is built from those files (the command's report.html), timed with scoring in run_log.
    Every registry is frozen while it runs (a RegistryError for whatever registers), opened after."""
    t0 = time.perf_counter()
    given, out_dir = out_dir, prepare_out_dir(out_dir)  # a symlinked --out: resolved once
    # timing trials follow: small models stay loaded from their last batch into them (local.PARK_BYTES)
    pool = ModelPool(loader, PARK_BYTES if cfg.efficiency.enabled else 0)
    threads = plan_threads(cfg.threads, cfg.efficiency.cpu_threads, workers=cfg.workers)
    with (
        Store(out_dir / "store.sqlite") as store,
        using(threads) as torch_threads,
        thawed_after(),
    ):
        pool.on_load = torch_threads.ensure  # set when a local model first loads torch, never before
        try:
            with building_long_lived():  # the datasets' samples: out of every later collection
                plan = plan_run(cfg, store, pool, strict)
            plan.retry_failed = retry_failed
            require_cells(plan)
            for task in {id(c.task): c.task for c in plan.cells}.values():
                task.warm_up()  # e.g. the METEOR JVM starts loading while the models run
            executor = EXECUTORS.get(cfg.executor)
            t_exec = time.perf_counter()
            request = ExecutionRequest(
                plan,
                store,
                pool,
                cfg.seed,
                strict,
                quiet,
                options=cfg.executor_options,
                workers=threads.workers,
            )
            stats = executor(request)
            require_cells(plan)  # every cell may have been left out at run time (inputs missing)
            judged = judge_plan(plan, store, pool, cfg.seed, strict) if plan.judges else JudgeStats()
            t_prof = time.perf_counter()
            # after every cell, so that all models are timed side by side, interleaved (profiling.py)
            profiles = (
                profile_plan(plan, store, pool, cfg, threads.timing) if cfg.efficiency.enabled else Profiles()
            )
            t_score = time.perf_counter()
            stats.forward_calls = pool.forward_calls + stats.remote_forward_calls
        finally:
            pool.close()
        with building_long_lived():  # every cell's records, held until the results are written
            scored = score_cells(plan, store)
        features_rejected = dict(store.features_rejected)  # this store's: another is opened below
    with writing(out_dir / "samples.jsonl"):
        n_samples = write_samples(scored, out_dir / "samples.jsonl")
    with writing(out_dir / "skipped.jsonl"):
        write_skipped(plan.datasets, out_dir / "skipped.jsonl")
    manifest = {
        "config": redact(cfg.written.model_dump(mode="json")),  # URL credentials, secret-looking keys
        "seeds": {"run": cfg.seed, "bootstrap": cfg.scoring.seed},
        "versions": package_versions(),
        "git": git_revision(),
        "hardware": {**hardware(), "threads": threads.to_json()},
        "models": models_manifest(cfg.models, plan),
        "datasets": {
            c.dataset.name: {"fingerprint": c.dataset.fingerprint, "skipped_records": len(c.dataset.skipped)}
            for c in plan.cells
        },
        "protocols": sorted({f"{c.model.name}/{c.task.name}: {c.protocol.name}" for c in plan.cells}),
        "skipped": plan.skipped,
        "not_applicable": plan.not_applicable,
        **out_dir_entry(given, out_dir),
    }
    for entry in plan.not_loaded:  # named beside the models that ran, with no fingerprint
        manifest["models"].setdefault(entry["model"], {"spec": entry["checkpoint"]})
    timing = timing_block(profiles, cfg.efficiency.trials) if cfg.efficiency.enabled else None
    results = build_results(
        scored,
        profiles,
        cfg.scoring,
        timing,
        manifest,
        plan.not_loaded,
        plan.not_run,
        [*skip_notes(plan.datasets), *threads.notes],
        judges_block(plan, scored),
    )
    with Store(out_dir / "store.sqlite") as store:  # what scoring added, for the next rerun
        keep_scored(store, scored)
    text = results_text(results)
    with writing(out_dir / "results.json"):
        atomic_write_text(out_dir / "results.json", text)
    if reports is not None:
        reports(out_dir)
    log = {
        "wall_seconds": round(time.perf_counter() - t0, 3),
        "phase_seconds": {  # where the time went: plan (data, model info), cells, timing trials, scoring
            "plan": round(t_exec - t0, 3),
            "execute": round(t_prof - t_exec, 3),
            "timing_trials": round(t_score - t_prof, 3),
            "score_and_write": round(time.perf_counter() - t_score, 3),
        },
        "forward_calls": stats.forward_calls,
        "records_written": stats.records_written,
        "failed": stats.failed,
        "timing_trials_reused": profiles.reused_trials,
        "recomputed_stale": stats.stale,
        "retried_failed": stats.retried,
        "answers_cut": stats.answers_cut,
        "regions_padded": stats.regions_padded,
        "samples_jsonl_lines": n_samples,
        **({"corruptions": stats.inputs} if stats.inputs else {}),
        **({"judge": judged.to_json()} if plan.judges else {}),
        # a named METEOR server's refusals and spot checks (this process's, metrics/meteor_remote.py)
        **({"meteor": meteor} if (meteor := meteor_events()) else {}),
        # kept scored parts found damaged (digest, decode, non-finite), recomputed (runner/score/score_cache.py)
        **({"scored_parts_rejected": rejected} if (rejected := rejected_parts(scored)) else {}),
        # kept region features found damaged, deleted and extracted again, by reason (runner/store.py)
        **({"features_rejected": features_rejected} if features_rejected else {}),
    }
    if stats.call_logs:  # served models: concurrency over time and the tokens their servers reported
        log["served"] = stats.call_logs
    with writing(out_dir / "run_log.json"):
        atomic_write_text(out_dir / "run_log.json", json.dumps(log, indent=1) + "\n")
    return RunOutcome(out_dir, results, stats, plan, n_samples)

"""The files a run writes beside its store once scored: the manifest of results.json, results.json
itself, and run_log.json (wall times and counters, which results.json never holds)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from argus_eval.data.atomic import atomic_write_text
from argus_eval.metrics.meteor_remote import meteor_events
from argus_eval.models.secrets import redact, redact_text
from argus_eval.models.spec import ModelConfig
from argus_eval.results_model import Results, results_text
from argus_eval.runner.config import RunSpec
from argus_eval.runner.execute.local import ExecStats
from argus_eval.runner.judge.judging import JudgeStats
from argus_eval.runner.plan.plan import Plan
from argus_eval.runner.score.score import ScoredCell, rejected_parts
from argus_eval.runner.threads import ThreadPlan
from argus_eval.runner.write.manifest import git_revision, hardware, out_dir_entry, package_versions
from argus_eval.runner.write.outputs import writing


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


def run_manifest(cfg: RunSpec, plan: Plan, threads: ThreadPlan, given: Path, out_dir: Path) -> dict[str, Any]:
    """results.json's manifest: the config as written (redacted), seeds, versions, hardware, models,
    datasets and protocols of the cells that ran, what was skipped, and the output folder."""
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
    return manifest


def write_results(out_dir: Path, results: Results) -> None:
    """results.json, written whole (an OSError is one OutputError naming the file)."""
    text = results_text(results)
    with writing(out_dir / "results.json"):
        atomic_write_text(out_dir / "results.json", text)


def run_log(
    wall: float,
    phase_seconds: dict[str, float],
    stats: ExecStats,
    reused_trials: int,
    samples_written: int,
    judged: JudgeStats | None,
    scored: list[ScoredCell],
    features_rejected: dict[str, int],
) -> dict[str, Any]:
    """run_log.json: where the time went (per phase of runner/pipeline.py) and what the run counted.
    judged: the judges' counts, None when no task is judged."""
    log = {
        "wall_seconds": wall,
        "phase_seconds": phase_seconds,  # plan (data, model info), cells, timing trials, scoring
        "forward_calls": stats.forward_calls,
        "records_written": stats.records_written,
        "failed": stats.failed,
        "timing_trials_reused": reused_trials,
        "recomputed_stale": stats.stale,
        "retried_failed": stats.retried,
        "answers_cut": stats.answers_cut,
        "regions_padded": stats.regions_padded,
        "samples_jsonl_lines": samples_written,
        **({"corruptions": stats.inputs} if stats.inputs else {}),
        **({"judge": judged.to_json()} if judged is not None else {}),
        # a named METEOR server's refusals and spot checks (this process's, metrics/meteor_remote.py)
        **({"meteor": meteor} if (meteor := meteor_events()) else {}),
        # kept scored parts found damaged (digest, decode, non-finite), recomputed (score/score_cache.py)
        **({"scored_parts_rejected": rejected} if (rejected := rejected_parts(scored)) else {}),
        # kept region features found damaged, deleted and extracted again, by reason (runner/store.py)
        **({"features_rejected": features_rejected} if features_rejected else {}),
    }
    if stats.call_logs:  # served models: concurrency over time and the tokens their servers reported
        log["served"] = stats.call_logs
    return log


def write_run_log(out_dir: Path, log: dict[str, Any]) -> None:
    with writing(out_dir / "run_log.json"):
        atomic_write_text(out_dir / "run_log.json", json.dumps(log, indent=1) + "\n")

"""A record's key holds everything that changes it: the fingerprint of every model that shaped it (a
two-stage retrieval's first stage included) and every option that reaches a model; call-only options
(timeouts, waits, concurrency, retries) stay out, so changing them recomputes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from argus_eval.models.loading import model_fingerprint
from argus_eval.models.options import SCHEME_OPTIONS
from argus_eval.models.spec import ModelConfig
from argus_eval.models.zoo_store import CHECKPOINTS
from argus_eval.results_model import results_json
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import RunOutcome, run
from hardening_fixtures import assert_same_as_fresh, stored_records
from model_fixtures import tiny_dir
from pipeline_fixtures import tiny_config


def _two_stage_config(cache: Path, first_stage: Path) -> dict[str, Any]:
    """A pair scorer (tiny Qwen2.5-VL) shortlisted by first_stage on retrieval, and answering questions;
    a dual encoder (tiny CLIP) embedding on retrieval: only the VLM's retrieval cells use the first stage."""
    cfg = tiny_config(cache, resamples=0, tasks=["retrieval", "reasoning"])
    cfg["models"] = [
        {"name": "vlm", "spec": f"hf:{tiny_dir('qwen2_5_vl')}", "device": "cpu", "batch_size": 4},
        cfg["models"][0],
    ]
    cfg["datasets"] = cfg["datasets"][:1]
    cfg["perturbations"] = [{"image": "brightness", "severity": 2}]
    cfg["tasks"] = [{"name": "retrieval", "shortlist": 4, "first_stage": f"hf:{first_stage}"}, "reasoning"]
    return cfg


def _run(cfg: dict[str, Any], out: Path) -> RunOutcome:
    return run(parse_config(cfg, "test"), out, quiet=True)


def _noise_projections(checkpoint: Path) -> None:
    """The issue's edit: CLIP's projection tensors replaced by noise in place (same names and shapes)."""
    weights = checkpoint / "model.safetensors"
    tensors = load_file(str(weights))
    rng = np.random.default_rng(5)
    hit = [k for k in tensors if "projection" in k]
    assert hit, sorted(tensors)
    for k in hit:
        tensors[k] = rng.standard_normal(tensors[k].shape).astype(tensors[k].dtype)
    save_file(tensors, str(weights), metadata={"format": "pt"})


def test_replaced_first_stage_recomputes_exactly_the_cells_it_shortlisted(tmp_path: Path) -> None:
    first = tmp_path / "first-stage"
    shutil.copytree(CHECKPOINTS / "clip", first)
    cfg = _two_stage_config(tmp_path / "cache", first)
    before = _run(cfg, tmp_path / "reused")
    shortlisted = [c for c in before.plan.cells if c.helpers]
    assert {(c.model.name, c.task.name) for c in shortlisted} == {("vlm", "retrieval")}
    assert len(shortlisted) == 2  # clean and brightness
    assert len(before.plan.cells) > len(shortlisted)
    old = stored_records(tmp_path / "reused")

    _noise_projections(first)
    again = _run(cfg, tmp_path / "reused")
    n_shortlisted = sum(len(c.samples) for c in shortlisted)
    assert again.stats.records_written == n_shortlisted  # exactly those cells, nothing else
    assert again.stats.forward_calls > 0
    changed = {c.key for c in again.plan.cells if c.helpers}
    assert changed.isdisjoint(c.key for c in shortlisted)  # the first stage's fingerprint is in the key
    unchanged = [c.key for c in again.plan.cells if not c.helpers]
    assert sorted(unchanged) == sorted(c.key for c in before.plan.cells if not c.helpers)
    new = stored_records(tmp_path / "reused")
    firsts = [
        (old[(a.key, sid)][1]["first"], new[(b.key, sid)][1]["first"])
        for a, b in zip(shortlisted, [c for c in again.plan.cells if c.helpers], strict=True)
        for sid in (s.sample_id for s in a.samples)
    ]
    assert any(not np.array_equal(x, y) for x, y in firsts)  # the noise reached the shortlist

    fresh = _run(cfg, tmp_path / "fresh")
    assert_same_as_fresh(tmp_path / "reused", tmp_path / "fresh")
    assert results_json(again.results)["cells"] == results_json(fresh.results)["cells"]
    assert _run(cfg, tmp_path / "reused").stats.forward_calls == 0


# Every setting and option each scheme reads, and whether it is in the model's key. Written out by hand:
# a new option fails this test until it is placed on one side. Out of the key: where a model runs (device),
# how its inputs are batched (batch_size: every adapter is batch-invariant, tests/test_batch_invariance_*)
# and the API's call-only options.
IN_KEY = {
    "hf": {"dtype", "max_new_tokens", "trust_remote_code", "options.region_features"},
    "hf-hub": {"dtype", "max_new_tokens", "trust_remote_code", "revision", "options.region_features"},
    "zoo": {"dtype", "max_new_tokens", "trust_remote_code", "options.region_features"},
    "api": {"max_new_tokens", "options.extra_body", "options.max_answer_chars", "options.token_limit_field"},
}
OUT_OF_KEY = {
    "hf": {"device", "batch_size", "revision"},  # a local folder: its files are hashed, revision unused
    "hf-hub": {"device", "batch_size"},
    "zoo": {"device", "batch_size", "revision"},
    "api": {
        "device", "batch_size", "revision", "dtype", "trust_remote_code",
        "options.concurrency", "options.timeout_s", "options.max_retries", "options.backoff_s",
        "options.max_wait_s", "options.api_key_env", "options.adaptive", "options.max_concurrency",
        "options.throttle_retries",
    },
}  # fmt: skip
CHANGED: dict[str, Any] = {
    "device": "cuda",
    "batch_size": 3,
    "revision": "v2",
    "dtype": "bfloat16",
    "max_new_tokens": 5,
    "trust_remote_code": True,
    "options.region_features": "grid",
    "options.extra_body": {"top_k": 1},
    "options.max_answer_chars": 10,
    "options.concurrency": 2,
    "options.timeout_s": 3.0,
    "options.max_retries": 4,
    "options.backoff_s": 2.0,
    "options.max_wait_s": 5.0,
    "options.api_key_env": "OTHER_KEY",
    "options.token_limit_field": "max_completion_tokens",
    "options.adaptive": False,
    "options.max_concurrency": 16,
    "options.throttle_retries": 2,
}
SPECS = {
    "hf": f"hf:{tiny_dir('clip')}",
    "hf-hub": "hf:openai/clip-vit-base-patch32",  # fingerprinted by id and revision, nothing downloaded
    "zoo": "zoo:clip",
    "api": "api:http://127.0.0.1:1/v1#m",
}
SETTINGS = ("device", "batch_size", "revision", "dtype", "max_new_tokens", "trust_remote_code")


@pytest.mark.parametrize("scheme", sorted(SPECS))
def test_each_option_a_scheme_reads_is_in_the_key_or_call_only(scheme: str) -> None:
    options = SCHEME_OPTIONS.get(scheme.partition("-")[0])
    reads = set(SETTINGS) | {f"options.{o}" for o in options.model_fields}
    assert reads == IN_KEY[scheme] | OUT_OF_KEY[scheme]
    assert set(ModelConfig.model_fields) - {"name", "spec", "tasks", "options"} == set(SETTINGS)
    base = ModelConfig(name="m", spec=SPECS[scheme])
    in_key = set()
    for name in sorted(reads):
        option = name.removeprefix("options.")
        changed = (
            ModelConfig(name="m", spec=SPECS[scheme], options={option: CHANGED[name]})
            if name.startswith("options.")
            else ModelConfig(name="m", spec=SPECS[scheme], **{name: CHANGED[name]})
        )
        if model_fingerprint(changed) != model_fingerprint(base):
            in_key.add(name)
    assert in_key == IN_KEY[scheme]
    call_only = {f"options.{o}" for o in options.call_only}
    assert call_only <= OUT_OF_KEY[scheme]
    assert call_only == {n for n in OUT_OF_KEY[scheme] if n.startswith("options.")}


# Every option of every task, changed: each reaches the request hash that keys the task's records (the
# ones that only change scoring, like cider_scale, are in it too: conservative, never stale).
TASK_CHANGES: dict[str, dict[str, Any]] = {
    "retrieval": {"ks": [1, 5], "directions": ["i2t"], "shortlist": 3, "first_stage": "zoo:clip"},
    "captioning": {
        "prompt": "Caption it.",
        "prefix_prompt": "a picture of",
        "max_new_tokens": 9,
        "metrics": ["CIDEr"],
        "cider_scale": 3.0,
    },
    "reasoning": {
        "prompt": "{question} One word.",
        "choice_prompt": "{question} {options} Letter?",
        "statement": "{answer}: {question}",
        "statements": {"number": "there are {answer}"},
        "max_new_tokens": 3,
        "vqa_min_answers": 4,
    },
}


# Task options that never change a model's answer, so they stay out of the request hash: the judge
# (tasks/judge.py) reads answers after the fact, and its own fingerprint keys its verdicts (test_judge.py);
# the VQA release only rescores stored answers, and keys the kept scored parts (Task.scoring_hash).
NOT_IN_REQUEST: dict[str, dict[str, Any]] = {
    "retrieval": {},
    "captioning": {"judge": {"model": "zoo:gemma3"}},
    "reasoning": {"judge": {"model": "zoo:gemma3"}, "vqa_release": "2017"},
}


@pytest.mark.parametrize("name", sorted(TASK_CHANGES))
def test_every_task_option_is_in_the_request_hash(name: str) -> None:
    from argus_eval.models.protocols import EMBED, GENERATE, POOL, SCORE_PAIRS, ModelInfo
    from argus_eval.tasks.base import TASKS
    from argus_eval.tasks.registry import make_tasks, parse_tasks

    options = set(TASKS.get(name).options_model.model_fields) - {"name"}
    assert options == set(TASK_CHANGES[name]) | set(NOT_IN_REQUEST[name])
    info = ModelInfo("m", "m", "fp", frozenset({EMBED, GENERATE, SCORE_PAIRS, POOL}))

    def request(**changed: Any) -> str:
        task = make_tasks(parse_tasks([{"name": name, **changed}]))[0]
        return task.request_hash(task.choose_protocol(info))

    base = request()
    for option, value in TASK_CHANGES[name].items():
        assert request(**{option: value}) != base, option
    for option, value in NOT_IN_REQUEST[name].items():
        assert request(**{option: value}) == base, option

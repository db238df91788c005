"""Every model family, as a tiny random checkpoint loaded through from_pretrained, runs the suite's
tasks through the runner with a native or a named substitute protocol, and is batch-size invariant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from argus_eval.results_model import results_json
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from model_fixtures import tiny_dir
from pipeline_fixtures import tiny_config

# family -> the protocol each task must use (None: the family cannot serve the task; it is named)
EXPECTED: dict[str, dict[str, str | None]] = {
    "clip": {"retrieval": "embed", "captioning": "caption-by-retrieval", "reasoning": "embed-statements"},
    "blip-itm": {"retrieval": "embed", "captioning": "caption-by-retrieval", "reasoning": "embed-statements"},
    "blip-caption": {"retrieval": None, "captioning": "caption", "reasoning": None},
    "blip-vqa": {"retrieval": None, "captioning": "generate", "reasoning": "generate"},
    "lxmert-vqa": {"retrieval": None, "captioning": None, "reasoning": "classify"},
    "gemma3": {"retrieval": "score-pairs", "captioning": "generate", "reasoning": "generate"},
    "qwen2_5_vl": {"retrieval": "score-pairs", "captioning": "generate", "reasoning": "generate"},
}


def _config(cache: Path, family: str, batch_size: int) -> dict[str, object]:
    cfg = tiny_config(cache, tasks=["retrieval", "captioning", "reasoning"], batch_size=batch_size)
    cfg["models"] = [
        {"name": family, "spec": f"hf:{tiny_dir(family)}", "device": "cpu", "batch_size": batch_size}
    ]
    cfg["datasets"] = cfg["datasets"][:1]  # type: ignore[index]
    cfg["perturbations"] = []
    cfg["scoring"] = {"resamples": 0}
    return cfg


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.mark.parametrize("family", sorted(EXPECTED))
def test_family_runs_suite_and_is_batch_invariant(family: str, cache: Path, tmp_path: Path) -> None:
    out8 = run(parse_config(_config(cache, family, 8), "t"), tmp_path / "b8", quiet=True)
    used = {c["task"]: c["protocol"] for c in results_json(out8.results)["cells"]}
    for task, protocol in EXPECTED[family].items():
        if protocol is None:
            assert task not in used
            assert any(s["task"] == task for s in results_json(out8.results)["manifest"]["skipped"]), task
        else:
            assert used.get(task) == protocol, (task, used)
    out1 = run(parse_config(_config(cache, family, 1), "t"), tmp_path / "b1", quiet=True)
    preds8 = [
        json.loads(x)["prediction"] for x in (tmp_path / "b8" / "samples.jsonl").read_text().splitlines()
    ]
    preds1 = [
        json.loads(x)["prediction"] for x in (tmp_path / "b1" / "samples.jsonl").read_text().splitlines()
    ]
    assert preds8 == preds1
    p8 = [c["primary"] for c in results_json(out8.results)["cells"]]
    p1 = [c["primary"] for c in results_json(out1.results)["cells"]]
    assert p8 == pytest.approx(p1, abs=1e-6)

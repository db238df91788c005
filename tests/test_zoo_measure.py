"""`argus zoo eval` measures a zoo model with the harness: the manifest's figures are a run's figures.

The shipped lxmert on a tiny studio split: its accuracy and swapped-image accuracy are recomputed by
hand from the run's samples.jsonl, its blind baseline from data/blind.py on the same dataset, and an
`argus run` of the config it wrote reports the same figures.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from argus_eval.models import zoo_store
from argus_eval.zoo import catalog
from argus_eval.zoo.measure import (
    CONFIG_FILE,
    Sizes,
    eval_config,
    passes_zoo_rule,
    remeasure,
    run_figures,
    zoo_tasks,
)

TINY = Sizes(images=6, questions=12, train_images=8, domains=("studio",))


@pytest.mark.parametrize(
    ("capabilities", "tasks"),
    [
        (["embed", "score_pairs"], ["retrieval"]),  # dual encoder: captioning/QA only by substitute
        (["caption"], ["captioning"]),
        (["classify"], ["reasoning"]),
        (["choose", "generate", "pool", "score_pairs"], ["captioning", "reasoning"]),  # chat VLM
        (["score_pairs"], []),  # retrieval by pair scores is a substitute: name the task to measure it
    ],
)
def test_tasks_are_those_the_capabilities_serve_natively(capabilities: list[str], tasks: list[str]) -> None:
    assert zoo_tasks({"capabilities": capabilities}) == tasks


def test_a_manifest_entry_may_name_its_tasks() -> None:
    named = [{"name": "retrieval", "shortlist": 16}]
    assert zoo_tasks({"capabilities": ["score_pairs", "pool"], "tasks": named}) == named


def test_eval_config_is_one_model_each_domain_and_the_swap_control() -> None:
    cfg = eval_config("lxmert", {"capabilities": ["classify"], "options": {}}, Sizes())
    assert [m["spec"] for m in cfg["models"]] == ["zoo:lxmert"]
    assert [(d["domain"], d["split"], d["n_images"]) for d in cfg["datasets"]] == [
        ("studio", "test", 300),
        ("clutter", "test", 300),
        ("palette", "test", 300),
    ]
    # 300 images x 10 questions: the first 1,000 questions and every image (a limit counts each kind).
    assert all(d["limit"] == 1000 and d["questions_per_image"] == 10 for d in cfg["datasets"])
    assert cfg["tasks"] == ["reasoning"] and cfg["perturbations"] == [{"control": "swap"}]


@pytest.mark.parametrize(
    ("score", "blind", "interval", "passes"),
    [
        (0.50, 0.40, [0.01, 0.10], True),
        (0.50, 0.40, [-0.01, 0.10], False),  # the swap may not cost anything
        (0.40, 0.40, [0.05, 0.10], False),  # no better than answering blind
        (0.50, None, [0.05, 0.10], False),  # no blind baseline: the rule cannot be checked
    ],
)
def test_zoo_rule_needs_both_the_blind_baseline_and_the_swap(
    score: float, blind: float | None, interval: list[float], passes: bool
) -> None:
    row = {"score": score, "blind_baseline": blind, "swap": {"score": 0.4, "interval": interval}}
    assert passes_zoo_rule(row) is passes
    assert passes_zoo_rule({**row, "swap": None}) is False


def _accuracy(rows: list[dict[str, Any]], condition: str) -> float:
    picked = [r for r in rows if r["condition"] == condition and r["task"] == "reasoning"]
    assert picked
    correct: int = sum(r["prediction"] == r["reference"][0] for r in picked)
    return correct / len(picked)


@pytest.fixture
def measured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], Path]:
    import argus_eval.runner.plan.datasets as run_datasets

    monkeypatch.setattr(run_datasets, "DEFAULT_CACHE", tmp_path / "cache")
    manifest = tmp_path / "manifest.json"
    shutil.copy(zoo_store.MANIFEST, manifest)
    monkeypatch.setattr(zoo_store, "MANIFEST", manifest)
    out = tmp_path / "zoo-lxmert"
    entry = remeasure("lxmert", out, lambda _m: None, TINY)
    return entry, out


def test_zoo_eval_figures_are_the_runs_and_an_argus_run_repeats_them(
    measured: tuple[dict[str, Any], Path], tmp_path: Path
) -> None:
    from argus_eval.data.blind import blind_answers
    from argus_eval.runner.config import load_config, parse_config
    from argus_eval.runner.pipeline import run
    from argus_eval.runner.plan.datasets import load_datasets
    from argus_eval.tasks.reasoning import ReasoningTask

    entry, out = measured
    assert json.loads(zoo_store.MANIFEST.read_text())["models"]["lxmert"]["eval"] == entry["eval"]
    row = entry["eval"]["tasks"]["reasoning"]["studio"]
    assert set(entry["eval"]["tasks"]) == {"reasoning"}
    assert row["samples"] == 12

    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert row["score"] == pytest.approx(_accuracy(rows, "clean"), abs=1e-4)
    assert row["swap"]["score"] == pytest.approx(_accuracy(rows, "control:swap@1"), abs=1e-4)
    assert row["swap"]["reliance"] == pytest.approx(row["score"] - row["swap"]["score"], abs=2e-4)

    # The blind baseline is data/blind.py's prior on this very dataset (the run's one blind prior).
    spec = parse_config(eval_config("lxmert", entry, TINY), "test")
    (dataset,) = load_datasets(spec)
    questions = ReasoningTask().select(dataset)
    blind = blind_answers(dataset, questions).answers
    expected = sum(b == q.answers[0] for b, q in zip(blind, questions, strict=True)) / len(questions)
    assert row["blind_baseline"] == pytest.approx(expected, abs=1e-4)

    # The acceptance line: a run of the written config (what `argus run --config` runs) reports the same
    # figures, computed afresh in another folder.
    again = run(load_config(out / CONFIG_FILE), tmp_path / "again", quiet=True)
    assert again.samples_written == len(rows)
    assert run_figures(again.results, "lxmert") == entry["eval"]["tasks"]


def test_shipped_eval_blocks_are_runs_of_the_tasks_the_models_serve() -> None:
    import subprocess
    import sys

    models = catalog.read_manifest()["models"]
    for name, entry in models.items():
        ev = entry["eval"]
        assert ev["config"]["models"][0]["spec"] == f"zoo:{name}"
        assert sorted(ev["tasks"]) == sorted(
            str(t if isinstance(t, str) else t["name"]) for t in zoo_tasks(entry)
        )
        for per in ev["tasks"].values():
            assert sorted(per) == sorted(d["name"] for d in ev["config"]["datasets"])
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run(
        [sys.executable, str(root / "scripts" / "zoo_tables.py")], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert all(f"**{name}**" in proc.stdout for name in models)

"""Image reliance end to end: fake models that ignore or read their image, and the tiny CLIP fixture."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from argus_eval.data.images import ImageArray, load_image
from argus_eval.models.protocols import GENERATE, Model, ModelInfo
from argus_eval.report.build import write_reports
from argus_eval.results_model import results_json
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from argus_eval.runner.plan.datasets import load_datasets
from argus_eval.tasks.reasoning import ReasoningTask
from pipeline_fixtures import tiny_config


def _digest(image: ImageArray) -> str:
    return hashlib.sha256(np.ascontiguousarray(image).tobytes()).hexdigest()


class FakeGenerator:
    """A Generator whose answer is a function of (image bytes, question): answers maps
    (image digest or None, question) -> answer; None means the image is ignored."""

    def __init__(self, name: str, answers: dict[tuple[str | None, str], str], reads_image: bool) -> None:
        self.info = ModelInfo(name, f"fake:{name}", name, frozenset({GENERATE}))
        self.forward_calls = 0
        self._answers = answers
        self._reads = reads_image

    def generate(
        self, images: Sequence[ImageArray], prompts: Sequence[str], max_new_tokens: int
    ) -> list[str]:
        self.forward_calls += 1
        out = []
        for image, prompt in zip(images, prompts, strict=True):
            question = prompt.split("\n", 1)[0]
            key = (_digest(image) if self._reads else None, question)
            out.append(self._answers.get(key, "?"))
        return out

    def close(self) -> None:
        pass


def _config(cache: Path, models: list[str], extra_datasets: list[dict[str, Any]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    cfg = tiny_config(cache, tasks=["reasoning"], resamples=200)
    cfg["perturbations"] = [{"image": "brightness", "severity": 2}, {"preset": "controls"}]
    if models:
        cfg["models"] = [
            {"name": m, "spec": f"api:http://fake.invalid#{m}", "device": "cpu", "batch_size": 4}
            for m in models
        ]
    cfg["datasets"] = [*cfg["datasets"], *extra_datasets]
    return cfg


def _fakes(cfg_dict: dict[str, Any]) -> dict[str, Model]:
    """'blind' answers from the question alone; 'reader' looks the true answer up by its image's bytes."""
    cfg = parse_config(cfg_dict, "test")
    task = ReasoningTask()
    reader: dict[tuple[str | None, str], str] = {}
    blind: dict[tuple[str | None, str], str] = {}
    for ds in load_datasets(cfg):
        for s in task.select(ds):
            assert s.question is not None
            image = load_image(ds.image_path(s), s.sample_id)
            reader[(_digest(image), s.question)] = s.answers[0]
            blind.setdefault((None, s.question), s.answers[0])  # a language prior: first answer seen
    return {"blind": FakeGenerator("blind", blind, False), "reader": FakeGenerator("reader", reader, True)}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def test_reliance_separates_a_blind_model_from_an_image_reader(tmp_path: Path, cache: Path) -> None:
    single = {"name": "single", "format": "shapesworld", "domain": "studio", "split": "test", "n_images": 1,
              "train_images": 8, "questions_per_image": 2}  # fmt: skip
    raw = _config(cache, ["blind", "reader"], [single])
    fakes = _fakes(raw)
    out = run(parse_config(raw, "test"), tmp_path / "out", quiet=True, loader=lambda c: fakes[c.name])
    res = results_json(out.results)
    block = res["reliance"]
    assert block["scoring"] == "reported" and res["scoring_options"]["reliance"] == "reported"
    entries = {(m, e["dataset"]): e for m, es in block["models"].items() for e in es}

    for ds in ("studio", "clutter"):
        b = entries[("blind", ds)]
        for name in ("swap", "blank"):
            c = b["controls"][name]
            lo, hi = c["interval"]
            assert c["reliance"] == 0.0 and lo <= 0.0 <= hi, (ds, name)
            assert c["same_prediction"] == 1.0
        r = entries[("reader", ds)]
        assert r["clean"] == 1.0  # it reads the true answer off its own image
        blank = r["controls"]["blank"]
        assert blank["reliance"] == r["clean"] and blank["same_prediction"] == 0.0
        swap = r["controls"]["swap"]
        assert swap["reliance"] >= 0.5 * r["clean"] and swap["interval"][0] > 0.0
        # the blind baseline sits beside every reasoning score, from training answers only
        assert 0.0 <= r["blind_baseline"]["score"] <= 1.0
        assert sum(r["blind_baseline"]["answered_by"].values()) == r["n_samples"]

    # one image: no swap is possible; named, never a 0
    lone = entries[("reader", "single")]["controls"]["swap"]
    assert "reliance" not in lone and "two distinct images" in lone["skipped"]
    assert any("control:swap@1 skipped" in n and "single" in n for n in res["notes"])
    swap_cells = [c for c in res["cells"] if c["dataset"] == "single" and c["condition"] == "control:swap@1"]
    assert swap_cells and all(c["primary"] is None for c in swap_cells)

    # controls are not perturbations: only the brightness cell enters RR
    for m in ("blind", "reader"):
        conds = {r["condition"] for r in res["models"][m]["retention"]}
        assert conds == {"image:brightness@2"}


def test_tiny_clip_reports_reliance_and_blind_baseline(tmp_path: Path, cache: Path) -> None:
    cfg = parse_config(_config(cache, []), "test")
    out_dir = tmp_path / "out"
    first = run(cfg, out_dir, quiet=True)
    res = json.loads((out_dir / "results.json").read_text())
    clip = res["reliance"]["models"]["clip"]
    assert {e["dataset"] for e in clip} == {"studio", "clutter"}
    for e in clip:
        assert e["task"] == "reasoning"
        assert set(e["controls"]) == {"swap", "blank"}
        for c in e["controls"].values():
            assert c["reliance"] is not None and len(c["interval"]) == 2
            assert 0.0 <= c["same_prediction"] <= 1.0
        assert e["blind_baseline"]["score"] is not None
    for c in res["cells"]:
        if c["task"] == "reasoning":
            assert "blind_baseline" in c["metrics"]
    write_reports(out_dir)
    summary = (out_dir / "summary.md").read_text()
    assert "## Image reliance (controls)" in summary and "blind_baseline=" in summary
    # swaps are reproducible: a rerun recomputes nothing and writes the same results
    second = run(cfg, out_dir, quiet=True)
    assert first.stats.forward_calls > 0 and second.stats.forward_calls == 0

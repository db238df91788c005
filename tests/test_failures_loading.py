"""A model that cannot load (no such directory, a corrupt checkpoint, a failure while the run is under
way) is named with the reason and its cells are listed as not run, while the run goes on with the
others; it counts as all its samples failed (exit 1), and --strict makes it fatal (exit 2, one line)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from argus_eval.errors import ModelLoadError
from argus_eval.models.loading import load_model
from argus_eval.models.protocols import Model
from argus_eval.models.spec import ModelConfig
from argus_eval.results_model import results_json
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from model_fixtures import tiny_dir
from pipeline_fixtures import cli, own_figures, tiny_config

MISSING = "hf:/nonexistent/dir"


def with_models(cache: Path, *extra: dict[str, Any]) -> dict[str, Any]:
    cfg = tiny_config(cache, resamples=20)
    cfg["models"] = [*cfg["models"], *extra]
    return cfg


def cells_of(results: dict[str, Any], model: str) -> set[tuple[str, str, str]]:
    return {(c["task"], c["dataset"], c["condition"]) for c in results["cells"] if c["model"] == model}


def test_a_missing_checkpoint_is_named_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    base = results_json(run(parse_config(with_models(cache), "t"), tmp_path / "alone", quiet=True).results)
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump(with_models(cache, {"name": "bad", "spec": MISSING})))
    out = tmp_path / "out"
    code, printed = cli(["run", "--config", str(cfg), "--out", str(out), "-q"], monkeypatch, capsys)
    assert code == 1  # a model that could not load counts as all its samples failed
    why = (
        "models[1].spec (model 'bad'): model 'hf:/nonexistent/dir': directory /nonexistent/dir does not exist"
    )
    assert f"not loaded: bad ({MISSING}): {why}" in printed
    assert "not run: bad / retrieval / studio: 3 cell(s)" in printed
    res = json.loads((out / "results.json").read_text())
    # the good model ran as if alone
    assert own_figures(res, "clip") == own_figures(base, "clip")
    # the bad one: named with the reason, its cells (those the plan asks of every model here) listed as
    # not run, every other field about it pointing to its not_loaded entry (test_load_reason_once.py)
    assert res["failures"]["not_loaded"] == [{"model": "bad", "checkpoint": MISSING, "reason": why}]
    point = "could not load (see its 'not loaded' entry)"
    unrun = res["failures"]["not_run"]
    assert {(c["task"], c["dataset"], c["condition"]) for c in unrun} == cells_of(res, "clip")
    assert all(c["reason"] == point and c["model"] == "bad" for c in unrun)
    clip_samples = sum(c["samples"] for c in res["cells"] if c["model"] == "clip")
    assert res["failures"]["models"]["bad"] == {
        "samples": clip_samples, "scored": 0, "failed": 0, "not_run": clip_samples, "share": 1.0,
        "reasons": [f"not run: {point}"],
    }  # fmt: skip
    assert res["models"]["bad"]["undefined"]["P"] == f"no cell ran: {point}"
    assert res["manifest"]["models"]["bad"] == {"spec": MISSING}
    assert any(n.startswith("bad: could not load") for n in res["notes"])
    for page in ("summary.md", "report.html"):
        text = (out / page).read_text()
        assert "Cells not run" in text and "Not loaded" in text and "/nonexistent/dir does not exist" in text
    code, _ = cli(["run", "-c", str(cfg), "-o", str(out), "-q", "--max-failed", "1"], monkeypatch, capsys)
    assert code == 0
    # --strict: fatal, one line, exit 2
    code, printed = cli(
        ["run", "-c", str(cfg), "-o", str(tmp_path / "strict"), "-q", "--strict"], monkeypatch, capsys
    )
    assert code == 2
    assert printed.strip() == f"error: {why}"


def test_a_corrupt_checkpoint_is_named_with_the_loaders_reason(tmp_path: Path) -> None:
    bad = tmp_path / "corrupt"
    shutil.copytree(tiny_dir("clip"), bad)
    (bad / "model.safetensors").write_bytes(b"not a safetensors file")
    cfg = with_models(tmp_path / "cache", {"name": "corrupt", "spec": f"hf:{bad}", "device": "cpu"})
    res = results_json(run(parse_config(cfg, "t"), tmp_path / "out", quiet=True).results)
    (entry,) = res["failures"]["not_loaded"]
    assert entry["model"] == "corrupt" and "cannot load model" in entry["reason"]
    assert "Error while deserializing header" in entry["reason"]
    assert res["failures"]["models"]["corrupt"]["share"] == 1.0
    assert res["failures"]["models"]["clip"]["share"] == 0.0 and cells_of(res, "clip")


def test_a_model_that_fails_to_load_mid_run_is_dropped_and_named(tmp_path: Path) -> None:
    twin = tmp_path / "twin"
    shutil.copytree(tiny_dir("clip"), twin)
    config = json.loads((twin / "config.json").read_text())
    (twin / "config.json").write_text(
        json.dumps({**config, "argus_test_copy": "twin"})
    )  # its own fingerprint
    cfg = with_models(tmp_path / "cache", {"name": "twin", "spec": f"hf:{twin}", "device": "cpu"})
    out = tmp_path / "out"
    run(parse_config(cfg, "t"), out, quiet=True)  # the store now knows both models without loading them
    # a new seed makes the seeded text perturbation's records stale: both models have work to do, and
    # twin's load fails there (as a checkpoint can once its files or the machine change)

    def loader(m: ModelConfig) -> Model:
        if m.name == "twin":
            raise ModelLoadError(f"model {m.spec!r}: out of memory while loading")
        return load_model(m)

    cfg["seed"] = 1
    outcome = run(parse_config(cfg, "t"), out, quiet=True, loader=loader)
    res = results_json(outcome.results)
    assert outcome.plan.not_loaded == [
        {
            "model": "twin",
            "checkpoint": f"hf:{twin}",
            "reason": f"models[1] (model 'twin'): model 'hf:{twin}': out of memory while loading",
        }
    ]
    assert {(c["task"], c["dataset"], c["condition"]) for c in res["failures"]["not_run"]} == cells_of(
        res, "clip"
    )
    assert (
        "twin" not in {c["model"] for c in res["cells"]} and res["failures"]["models"]["twin"]["share"] == 1.0
    )
    assert res["models"]["clip"]["P"] is not None and res["models"]["twin"]["P"] is None
    with pytest.raises(ModelLoadError, match="out of memory"):
        run(parse_config(cfg, "t"), tmp_path / "strict", quiet=True, loader=loader, strict=True)

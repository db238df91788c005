"""`argus zoo train NAME`: train -> install -> measure with the harness -> manifest, for a registered recipe.

The recipe here "trains" by copying the shipped lxmert checkpoint, so the test runs in seconds and checks
the driver, not the learning (tests/test_zoo_training.py checks the train functions)."""

from __future__ import annotations

import functools
import json
import os
import shutil
from pathlib import Path

import pytest
from rich.console import Console

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from argus_eval.zoo import catalog, measure
from argus_eval.zoo.recipes import RECIPES


def test_train_installs_measures_and_records_a_recipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argus_eval.runner.datasets as run_datasets
    from argus_eval.commands.zoo_cmd import train_zoo
    from argus_eval.zoo.training import build
    from argus_eval.zoo.training.recipe import Log, Recipe, Trained

    shipped = catalog.CHECKPOINTS / "lxmert"
    manifest = tmp_path / "manifest.json"
    shutil.copy(catalog.MANIFEST, manifest)
    monkeypatch.setattr(catalog, "MANIFEST", manifest)
    monkeypatch.setattr(catalog, "CHECKPOINTS", tmp_path / "checkpoints")
    monkeypatch.setattr(build, "CHECKPOINTS", tmp_path / "checkpoints")
    monkeypatch.setattr(run_datasets, "DEFAULT_CACHE", tmp_path / "cache")
    tiny = measure.Sizes(images=6, questions=12, train_images=8, domains=("studio",))
    monkeypatch.setattr(build, "measure", functools.partial(measure.measure, sizes=tiny))

    def train(out: Path, seed: int, seconds: float | None, log: Log) -> Trained:
        for f in shipped.iterdir():
            shutil.copy(f, out / f.name)
        return Trained(params=7, steps=0, seconds=0.0, config={}, data={"domain": "studio", "images": 0})

    recipe = Recipe(
        name="copy", family="lxmert", capabilities=("classify",), seed=3, note="a copy", train=train
    )
    RECIPES.register("copy", recipe)
    try:
        train_zoo("copy", None, None, tmp_path / "runs", Console(quiet=True))
    finally:
        RECIPES.unregister("copy")

    entry = json.loads(manifest.read_text())["models"]["copy"]
    assert entry["files"] == catalog.checkpoint_files(shipped)  # installed file for file, hashes recorded
    assert entry["training"]["seed"] == 3 and entry["params"] == 7 and entry["note"] == "a copy"
    assert set(entry["eval"]["tasks"]) == {"reasoning"}  # classify serves reasoning natively
    assert entry["eval"]["tasks"]["reasoning"]["studio"]["samples"] == 12
    assert (tmp_path / "runs" / "zoo-copy" / measure.CONFIG_FILE).is_file()

"""Train one zoo model from its recipe, install it, measure it with the harness, record the manifest."""

from __future__ import annotations

import os
import platform
import shutil
import time
from pathlib import Path
from typing import Any

from argus_eval.zoo.catalog import CHECKPOINTS, checkpoint_files, dir_size, write_entry
from argus_eval.zoo.measure import measure
from argus_eval.zoo.recipes import RECIPES
from argus_eval.zoo.training.recipe import Log


def build(
    name: str, out_dir: Path, seed: int | None = None, seconds: float | None = None, log: Log = print
) -> dict[str, Any]:
    """Train zoo model `name` (its recipe's seed unless given), replace the shipped checkpoint, measure
    it on held-out ShapesWorld data with the harness (run into out_dir) and write its manifest entry.
    Returns the entry."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    recipe = RECIPES.get(name)
    seed = recipe.seed if seed is None else seed
    CHECKPOINTS.mkdir(parents=True, exist_ok=True)
    staging = CHECKPOINTS / f".{name}.staging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    log(f"training zoo:{name} (seed {seed})")
    t0 = time.perf_counter()
    trained = recipe.train(staging, seed, seconds, log)
    train_s = time.perf_counter() - t0
    final = CHECKPOINTS / name
    shutil.rmtree(final, ignore_errors=True)
    staging.rename(final)
    log(f"trained zoo:{name} in {train_s:.0f} s ({trained.steps} steps); evaluating on held-out data")
    files = checkpoint_files(final)
    described: dict[str, Any] = {
        "family": recipe.family,
        "capabilities": sorted(recipe.capabilities),
        "options": recipe.options,
    }
    if recipe.tasks:
        described["tasks"] = list(recipe.tasks)
    entry: dict[str, Any] = {
        **described,
        "files": files,
        "size_bytes": dir_size(final),
        "params": trained.params,
        "training": {
            "seed": seed,
            "seconds": round(train_s, 1),
            "loop_seconds": round(trained.seconds, 1),
            "steps": trained.steps,
            "budget_seconds": seconds,
            "data": trained.data,
            "config": trained.config,
            "loss_by_tenth": [round(x, 4) for x in trained.losses],
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "machine": platform.machine(),
        },
        "note": recipe.note,
    }
    # The zoo loader verifies files against the manifest, and the evaluation reads the model's
    # capabilities, tasks and options from it, so they go in before measuring; so does the training
    # record, which a failed measurement would otherwise lose with the run (`argus zoo eval NAME`
    # measures the installed checkpoint again).
    write_entry(name, entry)
    entry["eval"] = measure(name, out_dir, log)
    write_entry(name, entry)
    log(f"zoo:{name}: {dir_size(final) / 1e6:.2f} MB, {len(files)} files, manifest updated")
    return entry

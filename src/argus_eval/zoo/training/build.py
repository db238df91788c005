"""Train one zoo model from its recipe, measure it with the harness and record its manifest entry: into the
run folder, or (asked with install) into the shipped zoo.

Every folder it will write is checked before training, so a read-only --out fails at once, not after the
minutes of training; without install nothing is written into the shipped zoo (checkpoints, manifest).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from argus_eval.models import zoo_store
from argus_eval.models.zoo_store import CHECKPOINTS
from argus_eval.runner.write.outputs import prepare_out_dir, writing
from argus_eval.zoo.catalog import checkpoint_files, dir_size, write_entry
from argus_eval.zoo.measure import measure
from argus_eval.zoo.recipe import Log
from argus_eval.zoo.recipes import RECIPES

CHECKPOINT_DIR = "checkpoint"  # <out>/<this>: the trained checkpoint when it is not installed
ENTRY_FILE = "manifest_entry.json"  # <out>/<this>: its manifest entry (installed: in zoo/manifest.json)


def writable(folder: Path) -> None:
    """OutputError naming folder and the fix unless this process can create files in it (created when
    missing); a probe file is made and removed, since permission bits alone do not say (root, ACLs)."""
    prepare_out_dir(folder)
    with writing(folder):
        tempfile.TemporaryFile(dir=folder).close()


def build(
    name: str,
    out_dir: Path,
    seed: int | None = None,
    seconds: float | None = None,
    log: Log = print,
    install: bool = False,
) -> dict[str, Any]:
    """Train zoo model `name` (its recipe's seed unless given), measure it on held-out ShapesWorld data
    with the harness (run into out_dir) and return its manifest entry. install: the checkpoint replaces
    the shipped one and the entry goes into the shipped manifest; else both go into out_dir
    (checkpoint/ and manifest_entry.json) and the shipped zoo is not touched."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    recipe = RECIPES.get(name)
    seed = recipe.seed if seed is None else seed
    writable(out_dir)  # before the minutes of training, as every folder written below
    home = CHECKPOINTS if install else out_dir
    if install:
        writable(CHECKPOINTS)
        writable(zoo_store.MANIFEST.parent)
    import torch

    staging = home / f".{name}.staging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    log(f"training zoo:{name} (seed {seed})")
    t0 = time.perf_counter()
    trained = recipe.train(staging, seed, seconds, log)
    train_s = time.perf_counter() - t0
    final = home / (name if install else CHECKPOINT_DIR)
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
    if not install:
        entry["eval"] = measure(name, out_dir, log, checkpoint=(final, entry))
        with writing(out_dir / ENTRY_FILE):
            (out_dir / ENTRY_FILE).write_text(json.dumps(entry, indent=1, sort_keys=True) + "\n", "utf-8")
        log(f"zoo:{name}: checkpoint in {final}, entry in {out_dir / ENTRY_FILE} (shipped zoo unchanged)")
        return entry
    # The zoo loader verifies files against the manifest, and the evaluation reads the model's
    # capabilities, tasks and options from it, so they go in before measuring; so does the training
    # record, which a failed measurement would otherwise lose with the run (`argus zoo eval NAME`
    # measures the installed checkpoint again).
    write_entry(name, entry)
    entry["eval"] = measure(name, out_dir, log)
    write_entry(name, entry)
    log(f"zoo:{name}: {dir_size(final) / 1e6:.2f} MB, {len(files)} files, manifest updated")
    return entry

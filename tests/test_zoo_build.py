"""`argus zoo train NAME`: train -> measure with the harness -> manifest entry, into the run folder or (with
--install) the shipped zoo, for a registered recipe; a read-only --out fails before any training.

The recipe here "trains" by copying the shipped lxmert checkpoint, so the test runs in seconds and checks
the driver, not the learning (tests/test_zoo_training.py checks the train functions)."""

from __future__ import annotations

import ctypes
import functools
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from argus_eval.models import zoo_store
from argus_eval.zoo import catalog, measure
from argus_eval.zoo.recipe import Log, Recipe, Trained
from argus_eval.zoo.recipes import RECIPES

SHIPPED = zoo_store.CHECKPOINTS / "lxmert"


def _copy_shipped(out: Path, seed: int, seconds: float | None, log: Log) -> Trained:
    for f in SHIPPED.iterdir():
        shutil.copy(f, out / f.name)
    return Trained(params=7, steps=0, seconds=0.0, config={}, data={"domain": "studio", "images": 0})


@pytest.fixture
def copy_recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A registered recipe 'copy' (the shipped lxmert, copied), measured on a tiny held-out split."""
    import argus_eval.runner.plan.datasets as run_datasets
    from argus_eval.zoo.training import build

    monkeypatch.setattr(run_datasets, "DEFAULT_CACHE", tmp_path / "cache")
    tiny = measure.Sizes(images=6, questions=12, train_images=8, domains=("studio",))
    monkeypatch.setattr(build, "measure", functools.partial(measure.measure, sizes=tiny))
    RECIPES.register("copy", Recipe("copy", "lxmert", ("classify",), 3, "a copy", _copy_shipped))
    try:
        yield "copy"
    finally:
        RECIPES.unregister("copy")


def _shipped_digest() -> dict[str, str]:
    """sha256 of every file of the shipped zoo: its checkpoints and manifest.json."""
    files = catalog.checkpoint_files(zoo_store.ZOO_DIR)
    return {k: v for k, v in files.items() if k == "manifest.json" or k.startswith("checkpoints/")}


def test_train_installs_measures_and_records_a_recipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, copy_recipe: str
) -> None:
    from argus_eval.commands.zoo_cmd import train_zoo
    from argus_eval.zoo.training import build

    manifest = tmp_path / "manifest.json"
    shutil.copy(zoo_store.MANIFEST, manifest)
    monkeypatch.setattr(zoo_store, "MANIFEST", manifest)
    monkeypatch.setattr(zoo_store, "CHECKPOINTS", tmp_path / "checkpoints")
    monkeypatch.setattr(build, "CHECKPOINTS", tmp_path / "checkpoints")
    train_zoo(copy_recipe, None, None, tmp_path / "runs", Console(quiet=True), install=True)

    entry = json.loads(manifest.read_text())["models"]["copy"]
    assert entry["files"] == catalog.checkpoint_files(SHIPPED)  # installed file for file, hashes recorded
    assert catalog.checkpoint_files(tmp_path / "checkpoints" / "copy") == entry["files"]
    assert entry["training"]["seed"] == 3 and entry["params"] == 7 and entry["note"] == "a copy"
    assert set(entry["eval"]["tasks"]) == {"reasoning"}  # classify serves reasoning natively
    assert entry["eval"]["tasks"]["reasoning"]["studio"]["samples"] == 12
    assert (tmp_path / "runs" / "zoo-copy" / measure.CONFIG_FILE).is_file()


def test_train_without_install_leaves_the_shipped_zoo_byte_identical(
    tmp_path: Path, copy_recipe: str
) -> None:
    from argus_eval.commands.zoo_cmd import train_zoo
    from argus_eval.zoo.training import build

    before = _shipped_digest()
    train_zoo(copy_recipe, None, None, tmp_path / "runs", Console(quiet=True))

    assert _shipped_digest() == before  # no checkpoint, no manifest entry written into the package
    assert "copy" not in catalog.read_manifest()["models"]
    run_dir = tmp_path / "runs" / "zoo-copy"
    entry = json.loads((run_dir / build.ENTRY_FILE).read_text())
    assert catalog.checkpoint_files(run_dir / build.CHECKPOINT_DIR) == catalog.checkpoint_files(SHIPPED)
    assert entry["files"] == catalog.checkpoint_files(SHIPPED) and entry["training"]["seed"] == 3
    # measured on the trained checkpoint in the run folder, not on a shipped one
    assert entry["eval"]["config"]["models"][0]["spec"] == f"hf:{(run_dir / build.CHECKPOINT_DIR).resolve()}"
    assert entry["eval"]["tasks"]["reasoning"]["studio"]["samples"] == 12


def _bound_by_permissions() -> None:
    """In the child, before exec: drop root's power to override file permissions (CAP_DAC_OVERRIDE and
    CAP_DAC_READ_SEARCH, from the bounding set), so a read-only folder is read-only to it too."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.mark.parametrize("install", [False, True])
def test_read_only_out_fails_at_once_and_touches_nothing(tmp_path: Path, install: bool) -> None:
    """The issue's case: `argus zoo train qwen2_5_vl --out <read-only>` used to train for minutes, replace
    the shipped checkpoint and manifest, then exit 2. Run as a real CLI process on a real read-only
    folder (without root's permission override when the tests run as root)."""
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    tmp_path.chmod(0o755)
    before = _shipped_digest()
    args = [sys.executable, "-m", "argus_eval.cli", "zoo", "train", "qwen2_5_vl", "--out", str(locked)]
    t0 = time.perf_counter()
    proc = subprocess.run(
        args + (["--install"] if install else []),
        capture_output=True,
        text=True,
        timeout=120,  # training qwen2_5_vl takes minutes: the check must come first
        preexec_fn=_bound_by_permissions if os.geteuid() == 0 else None,
    )
    elapsed = time.perf_counter() - t0
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and str(locked / "zoo-qwen2_5_vl") in lines[0], proc.stderr
    assert "Permission denied" in lines[0] and "training" not in proc.stdout
    assert elapsed < 60
    assert _shipped_digest() == before

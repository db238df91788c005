"""A run folder and its data, copied to other absolute paths with new modification times, rerun with no
model call: every record's input stamp digests its images' content, not their paths or times
(runner/execute/stamps.py)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from argus_eval.runner.plan.datasets import moved_data_hint
from hardening_fixtures import karpathy_dataset
from pipeline_fixtures import cli


def _config(root: Path) -> dict[str, Any]:
    shapes = {"format": "shapesworld", "split": "test", "n_images": 6, "train_images": 8}
    return {
        "name": "movable",
        "seed": 3,
        "cache_dir": str(root / "cache"),
        "models": [{"name": "n", "spec": "null:n", "batch_size": 4}],
        "datasets": [{"name": "studio", "domain": "studio", "questions_per_image": 3, **shapes}],
        "tasks": ["retrieval", "captioning", "reasoning"],
        "perturbations": [{"preset": "default"}, {"preset": "controls"}],
        "scoring": {"resamples": 20},
        "efficiency": {"enabled": False},
    }


def _log(out: Path) -> dict[str, Any]:
    return json.loads((out / "run_log.json").read_text())  # type: ignore[no-any-return]


def _results(out: Path, root: Path) -> dict[str, Any]:
    """results.json with timing fields and the one path it names (the config's cache_dir) left out."""
    body = json.loads((out / "results.json").read_text())
    for key in ("timing", "wall_seconds", "phase_seconds"):
        body.pop(key, None)
    text = json.dumps(body, sort_keys=True).replace(str(root), "ROOT")
    return json.loads(text)  # type: ignore[no-any-return]


def test_a_copied_run_and_its_data_rerun_with_no_model_call(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "moved" / "b"
    run(parse_config(_config(a), "a"), a / "out", quiet=True)
    first = _log(a / "out")
    assert first["records_written"] > 0 and first["forward_calls"] > 0
    shutil.copytree(a, b)
    later = time.time() + 3600
    for folder, _dirs, files in os.walk(b):
        for name in files:
            os.utime(os.path.join(folder, name), (later, later))
    run(parse_config(_config(b), "b"), b / "out", quiet=True)
    moved = _log(b / "out")
    assert (moved["forward_calls"], moved["records_written"], moved["recomputed_stale"]) == (0, 0, 0)
    assert _results(b / "out", b) == _results(a / "out", a)
    lines_a = (a / "out" / "samples.jsonl").read_text().replace(str(a), "ROOT")
    assert (b / "out" / "samples.jsonl").read_text().replace(str(b), "ROOT") == lines_a


def test_data_moved_from_its_root_is_one_line_naming_the_file_and_the_data_root_to_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = tmp_path / "old", tmp_path / "elsewhere" / "new"
    karpathy_dataset(old / "karpathy")
    entry = {
        "name": "k3",
        "format": "karpathy",
        "annotations": "karpathy/dataset_coco.json",
        "images": "karpathy/images",
    }
    cfg = {**_config(tmp_path), "data_root": str(old), "datasets": [entry], "tasks": ["retrieval"]}
    path = tmp_path / "run.yaml"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    argv = ["run", "-c", str(path), "--dry-run"]
    assert cli(argv, monkeypatch, capsys)[0] == 0
    new.parent.mkdir(parents=True)
    shutil.move(old, new)

    code, err = cli(argv, monkeypatch, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    words = " ".join(lines[0].split())
    missing = old / "karpathy" / "dataset_coco.json"
    assert words == (
        f"error: Karpathy split file {missing} not found; data_root is {old}: if the data moved, pass "
        "--data-root DIR, the folder where DIR/karpathy/dataset_coco.json is"
    )
    # the hint's fix works
    assert cli([*argv, "--data-root", str(new)], monkeypatch, capsys)[0] == 0


def test_the_hint_for_paths_outside_any_data_root() -> None:
    assert moved_data_hint(Path("/abs/a.json"), None).startswith("the config names it by an absolute path")
    assert moved_data_hint(Path("/abs/a.json"), Path("/other")).startswith(
        "the config names it by an absolute"
    )
    assert moved_data_hint(Path("rel/a.json"), None) == (
        "if the data is elsewhere, pass --data-root DIR, the folder where DIR/rel/a.json is"
    )

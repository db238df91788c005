"""Corruptions are computed once per (image file, condition, seed) for all models of a run and its
reruns (runner/inputs/images.py, runner/inputs/perturbed_store.py): counted in run_log.json, checked on read,
recomputed when an entry is damaged, and a store that cannot be written costs speed, never records."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from argus_eval.perturb.conditions import Condition, derive_seed
from argus_eval.runner.config import parse_config
from argus_eval.runner.inputs.images import ImageCache
from argus_eval.runner.inputs.perturbed_store import InputCacheWarning, PerturbedStore
from argus_eval.runner.pipeline import run
from pipeline_fixtures import own_figures


def _config(cache: Path, names: list[str]) -> dict[str, Any]:
    shapes = {"format": "shapesworld", "split": "test", "n_images": 6, "train_images": 8}
    return {
        "name": "reuse",
        "seed": 3,
        "cache_dir": str(cache),
        "models": [{"name": n, "spec": f"null:{n}", "batch_size": 4} for n in names],
        "datasets": [{"name": "studio", "domain": "studio", "questions_per_image": 3, **shapes}],
        "tasks": ["retrieval", "captioning", "reasoning"],
        "perturbations": [{"preset": "default"}, {"preset": "controls"}],
        "scoring": {"resamples": 20},
        "efficiency": {"enabled": False},
    }


def _distinct_corruptions(samples: Path) -> int:
    """(image file, condition, seed) over every record shown a corrupted image, the seed as
    runner/inputs/prepare.py derives it, and 0 for a corruption that ignores it (brightness)."""
    seen = set()
    for line in samples.read_text().splitlines():
        r = json.loads(line)
        cond = Condition.parse(r["condition"])
        if not cond.shows_perturbed_image:
            continue
        seed = derive_seed(3, r["sample_id"], cond.id) if cond.uses_seed else 0
        seen.add((r["image_path"], cond.id, seed))
    return len(seen)


def _log(out: Path) -> dict[str, Any]:
    return json.loads((out / "run_log.json").read_text())  # type: ignore[no-any-return]


def _results(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text())  # type: ignore[no-any-return]


def test_two_models_share_corruptions_and_a_third_model_computes_none(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(parse_config(_config(tmp_path / "cache", ["a", "b"]), "t"), out, quiet=True)
    first = _results(out)
    counts = _log(out)["corruptions"]
    distinct = _distinct_corruptions(out / "samples.jsonl")
    assert distinct > 50  # the default preset on three tasks: a real workload, not a vacuous one
    assert counts["computed"] == distinct
    assert counts["written_disk"] == distinct and counts["corrupt"] == 0
    run(parse_config(_config(tmp_path / "cache", ["a", "b", "c"]), "t"), out, quiet=True)
    second = _results(out)
    counts = _log(out)["corruptions"]
    assert counts["computed"] == 0
    assert counts["read_disk"] > 0
    for name in ("a", "b"):  # the first two models' figures did not move
        assert own_figures(second, name) == own_figures(first, name)
    # the third model saw the very pixels a fresh run computes itself
    run(parse_config(_config(tmp_path / "cache", ["c"]), "t"), tmp_path / "alone", quiet=True)
    assert own_figures(_results(tmp_path / "alone"), "c") == own_figures(second, "c")


def _image(tmp_path: Path) -> Path:
    from PIL import Image

    path = tmp_path / "im.png"
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 256, (40, 56, 3), dtype=np.uint8)).save(path)
    return path


FOG = Condition.parse("image:gaussian_noise@3")


def test_a_damaged_entry_is_recomputed_and_counted(tmp_path: Path) -> None:
    path = _image(tmp_path)
    fresh = ImageCache().get(path, "s", FOG, 7)
    root = tmp_path / "perturbed"
    ImageCache(disk=PerturbedStore(root)).get(path, "s", FOG, 7)
    (entry,) = [p for p in root.rglob("*") if p.is_file()]
    for damage in (lambda b: b[: len(b) // 2], lambda b: b[:-1] + bytes([b[-1] ^ 1]), lambda b: b"x"):
        entry.write_bytes(damage(entry.read_bytes()))
        cache = ImageCache(disk=PerturbedStore(root))
        np.testing.assert_array_equal(cache.get(path, "s", FOG, 7), fresh)
        assert cache.to_json()["corrupt"] == 1 and cache.to_json()["computed"] == 1
        assert cache.to_json()["written_disk"] == 1  # rewritten whole
    cache = ImageCache(disk=PerturbedStore(root))
    np.testing.assert_array_equal(cache.get(path, "s", FOG, 7), fresh)
    assert cache.to_json()["read_disk"] == 1 and cache.to_json()["computed"] == 0


def test_an_unwritable_store_warns_once_and_loses_nothing(tmp_path: Path) -> None:
    path = _image(tmp_path)
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")  # every write under it fails, as on a full or read-only disk
    cache = ImageCache(disk=PerturbedStore(blocked / "perturbed"))
    with pytest.warns(InputCacheWarning) as caught:
        got = [cache.get(path, "s", FOG, seed) for seed in range(3)]
    assert len(caught) == 1
    for seed, image in enumerate(got):
        np.testing.assert_array_equal(image, ImageCache().get(path, "s", FOG, seed))
    assert cache.to_json()["write_failed"] == 1 and cache.to_json()["computed"] == 3


def test_the_budget_stops_writing_not_computing(tmp_path: Path) -> None:
    path = _image(tmp_path)
    cache = ImageCache(disk=PerturbedStore(tmp_path / "p", max_bytes=40 * 56 * 3 * 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a budget reached is counted, not warned about
        for seed in range(4):
            cache.get(path, "s", FOG, seed)
    assert cache.to_json()["written_disk"] == 2 and cache.to_json()["over_budget"] == 2


def test_the_dry_run_counts_the_corruptions_and_records_a_run_makes(tmp_path: Path) -> None:
    from argus_eval.runner.plan.dryrun import describe_plan

    cfg = parse_config(_config(tmp_path / "cache", ["a", "b"]), "t")
    cost = describe_plan(cfg)[3].to_json()
    out = tmp_path / "out"
    outcome = run(cfg, out, quiet=True)
    assert cost["total"]["corruptions"] == _log(out)["corruptions"]["computed"] > 50
    assert cost["total"]["records"] == outcome.stats.records_written
    assert cost["total"]["requests"] == 0 and cost["total"]["region_extractions"] == 0
    assert cost["models"]["a"] == cost["models"]["b"] and cost["models"]["a"]["batches"] > 0

"""The shipped zoo: each checkpoint matches its manifest, loads through its adapter; tampering is caught."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from argus_eval.errors import CheckpointError
from argus_eval.models import zoo_store
from argus_eval.zoo import catalog
from argus_eval.zoo.recipes import ORDER, RECIPES

MODELS = sorted(catalog.read_manifest().get("models", {}))


def test_manifest_names_are_recipes() -> None:
    assert MODELS, "no zoo model ships in the manifest"
    for name in MODELS:
        assert name in ORDER
        assert RECIPES.get(name).family == catalog.read_manifest()["models"][name]["family"]


@pytest.mark.parametrize("name", MODELS)
def test_checkpoint_matches_manifest_and_loads(name: str) -> None:
    from argus_eval.models.loading import load_model
    from argus_eval.models.spec import ModelConfig

    entry = catalog.read_manifest()["models"][name]
    d = catalog.verify_checkpoint(name)
    assert set(catalog.checkpoint_files(d)) == set(entry["files"])
    assert any(p.endswith(".safetensors") for p in entry["files"])
    model = load_model(ModelConfig(name=name, spec=f"zoo:{name}", device="cpu"))
    try:
        assert model.info.capabilities == frozenset(entry["capabilities"])
        assert model.info.params == entry["params"]
    finally:
        model.close()


def _copy(name: str, tmp_path: Path) -> Path:
    src = zoo_store.CHECKPOINTS / name
    shutil.copytree(src, tmp_path / name)
    return tmp_path / name


@pytest.mark.parametrize("name", MODELS[:1])
def test_tampered_file_is_named(name: str, tmp_path: Path) -> None:
    d = _copy(name, tmp_path)
    target = d / "config.json"
    cfg = json.loads(target.read_text())
    cfg["argus_tampered"] = True
    target.write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError) as e:
        catalog.verify_checkpoint(name, root=tmp_path)
    assert str(target) in str(e.value)
    assert f"argus zoo train {name}" in str(e.value)


@pytest.mark.parametrize("name", MODELS[:1])
def test_missing_file_is_named(name: str, tmp_path: Path) -> None:
    d = _copy(name, tmp_path)
    weights = next(d.glob("*.safetensors"))
    weights.unlink()
    with pytest.raises(CheckpointError, match=weights.name):
        catalog.verify_checkpoint(name, root=tmp_path)


def test_missing_directory_and_unknown_name(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="argus zoo train"):
        catalog.verify_checkpoint(MODELS[0], root=tmp_path)
    with pytest.raises(CheckpointError, match="not in"):
        catalog.verify_checkpoint("no-such-model")


def test_write_entry_keeps_other_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = tmp_path / "manifest.json"
    monkeypatch.setattr(zoo_store, "MANIFEST", manifest)
    catalog.write_entry("a", {"family": "clip"})
    catalog.write_entry("b", {"family": "blip"})
    catalog.write_entry("a", {"family": "clip", "note": "again"})
    data = json.loads(manifest.read_text())
    assert data["models"] == {"a": {"family": "clip", "note": "again"}, "b": {"family": "blip"}}


def _zoo_without_video_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, Any]]:
    """A copy of the zoo whose qwen2_5_vl checkpoint and manifest entry lack the video processor config
    (as shipped before it was added); returns the checkpoint and the manifest written."""
    from argus_eval.models.processor_files import VIDEO_PROCESSOR_FILE

    d = _copy("qwen2_5_vl", tmp_path / "checkpoints")
    (d / VIDEO_PROCESSOR_FILE).unlink()
    manifest = json.loads(zoo_store.MANIFEST.read_text())
    del manifest["models"]["qwen2_5_vl"]["files"][VIDEO_PROCESSOR_FILE]
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setattr(zoo_store, "CHECKPOINTS", tmp_path / "checkpoints")
    monkeypatch.setattr(zoo_store, "MANIFEST", tmp_path / "manifest.json")
    return d, manifest


def test_complete_adds_the_missing_processor_file_and_records_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`argus zoo complete`: a shipped checkpoint that lacks its video processor config gets it, the
    manifest lists its sha256, and every other file and manifest field stays as it was."""
    from argus_eval.models.processor_files import VIDEO_PROCESSOR_FILE
    from argus_eval.zoo.completion import complete_checkpoint

    name = "qwen2_5_vl"
    d, manifest = _zoo_without_video_config(tmp_path, monkeypatch)
    before = catalog.checkpoint_files(d)

    assert complete_checkpoint(name) == [VIDEO_PROCESSOR_FILE]
    after = catalog.checkpoint_files(d)
    assert set(after) - set(before) == {VIDEO_PROCESSOR_FILE}
    assert {k: after[k] for k in before} == before  # weights and every other file byte-identical
    entry = catalog.read_manifest()["models"][name]
    assert entry["files"] == after
    assert entry["size_bytes"] == catalog.dir_size(d)
    unchanged = ("files", "size_bytes")
    assert {k: v for k, v in entry.items() if k not in unchanged} == {
        k: v for k, v in manifest["models"][name].items() if k not in unchanged
    }
    assert catalog.read_manifest()["models"]["clip"] == manifest["models"]["clip"]
    assert complete_checkpoint(name) == []  # idempotent
    catalog.verify_checkpoint(name)


def test_complete_refuses_a_modified_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from argus_eval.models.processor_files import VIDEO_PROCESSOR_FILE
    from argus_eval.zoo.completion import complete_checkpoint

    d, manifest = _zoo_without_video_config(tmp_path, monkeypatch)
    (d / "config.json").write_text((d / "config.json").read_text() + " ")
    with pytest.raises(CheckpointError, match=r"config\.json does not match"):
        complete_checkpoint("qwen2_5_vl")
    assert not (d / VIDEO_PROCESSOR_FILE).exists()
    assert catalog.read_manifest() == manifest

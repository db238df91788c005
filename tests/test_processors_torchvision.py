"""Processors load with and without torchvision: every shipped zoo checkpoint and every tiny builder's
checkpoint loads through the project's loader and answers a call of each capability it declares.

transformers picks other processor classes when torchvision is importable (torchvision image processors,
plus a video processor that Qwen2.5-VL requires) than without it (PIL ones), so this file runs twice in
CI: in the main environment (no torchvision) and in the one scripts/torchvision_env.sh builds (CUDA torch
and torchvision, run on CPU), where ARGUS_REQUIRE_TORCHVISION=1 turns the torchvision-only tests' skip
into a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from argus_eval.errors import ModelLoadError
from argus_eval.models import processor_files, zoo_store
from argus_eval.models.compat import torchvision_available
from argus_eval.models.loading import load_model
from argus_eval.models.processor_files import (
    PROCESSOR_FILE,
    VIDEO_PROCESSOR_FILE,
    complete_processor_files,
    missing_processor_files,
)
from argus_eval.models.protocols import CAPTION, CHOOSE, CLASSIFY, EMBED, GENERATE, POOL, SCORE_PAIRS
from argus_eval.models.spec import ModelConfig
from argus_eval.testing.tiny import TINY_BUILDERS
from argus_eval.zoo import catalog
from model_fixtures import tiny_dir, tiny_images

ZOO = sorted(catalog.read_manifest().get("models", {}))
TINY = sorted(TINY_BUILDERS.names())
TORCHVISION = torchvision_available()
needs_torchvision = pytest.mark.skipif(
    not TORCHVISION and os.environ.get("ARGUS_REQUIRE_TORCHVISION") != "1",
    reason="torchvision is not importable here (it never goes into the main environment); CI runs this "
    "file again in the environment scripts/torchvision_env.sh builds",
)
IMAGES = tiny_images(3, seed=1)
TEXTS = ["a red cube", "what color is the ball?", "two blue spheres"]


def _rows(x: Any, n: int) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    assert arr.shape[0] == n and np.isfinite(arr).all()
    return arr


def _unit_rows(x: Any) -> None:
    """L2-normalised rows; a zero row is what normalising a zero vector gives (a random tiny model's
    projector can output one)."""
    norms = np.linalg.norm(_rows(x, len(IMAGES)), axis=1)
    assert np.all((np.abs(norms - 1) < 1e-4) | (norms == 0)), norms


def _embeds(m: Any) -> None:
    _unit_rows(m.embed_images(IMAGES))
    _unit_rows(m.embed_texts(TEXTS))


def _pools(m: Any) -> None:
    _unit_rows(m.pool_images(IMAGES))
    _unit_rows(m.pool_texts(TEXTS))


# One call per capability, asserting what the protocol promises (shape, finiteness, unit rows, strings);
# what a call returns is not used.
CALLS: dict[str, Callable[[Any], object]] = {
    EMBED: _embeds,
    POOL: _pools,
    SCORE_PAIRS: lambda m: _rows(m.score_pairs(IMAGES, TEXTS), len(IMAGES)),
    CLASSIFY: lambda m: _rows(m.classify(IMAGES, TEXTS), len(IMAGES)),
    CHOOSE: lambda m: [_rows(s, 2) for s in m.choose(IMAGES, TEXTS, [["yes", "no"]] * len(IMAGES))],
    GENERATE: lambda m: _strings(m.generate(IMAGES, TEXTS, 4)),
    CAPTION: lambda m: _strings(m.generate(IMAGES, ["", "a", ""], 4)),
}


def _strings(out: list[str]) -> None:
    assert len(out) == len(IMAGES) and all(isinstance(s, str) for s in out)


def _exercise(spec: str, directory: Path) -> None:
    model = load_model(ModelConfig(name="m", spec=spec, device="cpu", batch_size=2))
    try:
        assert model.info.capabilities, spec
        for capability in sorted(model.info.capabilities):
            CALLS[capability](model)
        processor = getattr(model, "processor", None)
        if processor is not None:
            # The environment decides the image processor's backend: PIL classes without torchvision.
            image_processor = processor.image_processor
            image_processor = getattr(image_processor, "wrapped", image_processor)  # models/pixel_memo.py
            pil = type(image_processor).__name__.endswith("Pil")
            assert pil is not TORCHVISION, type(image_processor)
            assert ("video_processor" in processor.get_attributes()) is (TORCHVISION and _video(directory))
    finally:
        model.close()


def _video(directory: Path) -> bool:
    cls = json.loads((directory / PROCESSOR_FILE).read_text()).get("processor_class")
    return cls in processor_files.VIDEO_PROCESSORS


@pytest.mark.parametrize("name", ZOO)
def test_zoo_checkpoint_loads_and_answers(name: str) -> None:
    _exercise(f"zoo:{name}", catalog.verify_checkpoint(name))


@pytest.mark.parametrize("family", TINY)
def test_tiny_checkpoint_loads_and_answers(family: str) -> None:
    _exercise(f"hf:{tiny_dir(family)}", tiny_dir(family))


@pytest.mark.parametrize("name", [f"zoo:{n}" for n in ZOO] + [f"tiny:{f}" for f in TINY])
def test_every_checkpoint_has_complete_processor_files(name: str, tmp_path: Path) -> None:
    """Nothing is missing for either environment, and completing a copy writes nothing. (LXMERT has no
    processor, only a tokenizer, and its loader asks for none.)"""
    kind, _, key = name.partition(":")
    directory = zoo_store.CHECKPOINTS / key if kind == "zoo" else tiny_dir(key)
    if (directory / PROCESSOR_FILE).exists():
        assert missing_processor_files(directory) == {}
    copy = shutil.copytree(directory, tmp_path / directory.name)
    assert complete_processor_files(copy) == []


def _qwen_copy_without_video(tmp_path: Path) -> Path:
    d = shutil.copytree(zoo_store.CHECKPOINTS / "qwen2_5_vl", tmp_path / "qwen2_5_vl")
    (d / VIDEO_PROCESSOR_FILE).unlink()
    return d


def test_missing_video_config_is_found_and_written_from_the_image_processor(tmp_path: Path) -> None:
    d = _qwen_copy_without_video(tmp_path)
    assert list(missing_processor_files(d)) == [VIDEO_PROCESSOR_FILE]
    assert complete_processor_files(d) == [VIDEO_PROCESSOR_FILE]
    assert missing_processor_files(d) == {}
    video = json.loads((d / VIDEO_PROCESSOR_FILE).read_text())
    image = json.loads((d / PROCESSOR_FILE).read_text())["image_processor"]
    vision = json.loads((d / "config.json").read_text())["vision_config"]
    # Video frames are cut into the patches the vision tower was built for, and resized and normalised
    # as its images are.
    assert video["patch_size"] == vision["patch_size"]
    assert video["merge_size"] == vision["spatial_merge_size"]
    assert video["temporal_patch_size"] == vision["temporal_patch_size"]
    for key in ("size", "image_mean", "image_std", "rescale_factor", "resample"):
        assert video[key] == image[key], key
    assert video["video_processor_type"] == "Qwen2VLVideoProcessor"


def test_missing_processor_config_is_named(tmp_path: Path) -> None:
    d = shutil.copytree(zoo_store.CHECKPOINTS / "clip", tmp_path / "clip")
    (d / PROCESSOR_FILE).unlink()
    with pytest.raises(ModelLoadError) as e:
        load_model(ModelConfig(name="c", spec=f"hf:{d}", device="cpu"))
    assert f"cannot load processor from {d}: {d / PROCESSOR_FILE} is missing" in str(e.value)
    assert "save_pretrained" in str(e.value)


def test_without_torchvision_the_video_config_is_not_needed(tmp_path: Path) -> None:
    if TORCHVISION:
        pytest.skip("with torchvision the video config is required (see the torchvision tests)")
    d = _qwen_copy_without_video(tmp_path)
    load_model(ModelConfig(name="q", spec=f"hf:{d}", device="cpu")).close()


@needs_torchvision
def test_transformers_sees_torchvision() -> None:
    from transformers.utils.import_utils import is_torchvision_available

    assert TORCHVISION and is_torchvision_available()


@needs_torchvision
@pytest.mark.parametrize("zoo_dir", [False, True])
def test_missing_video_config_names_directory_file_and_fix(
    zoo_dir: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = _qwen_copy_without_video(tmp_path)
    if zoo_dir:
        monkeypatch.setattr(processor_files, "ZOO_ROOT", tmp_path)
    with pytest.raises(ModelLoadError) as e:
        load_model(ModelConfig(name="q", spec=f"hf:{d}", device="cpu"))
    msg = str(e.value)
    assert f"cannot load processor from {d}:" in msg and str(d / VIDEO_PROCESSOR_FILE) in msg
    fix = "argus zoo complete qwen2_5_vl" if zoo_dir else "complete_processor_files"
    assert fix in msg and "torchvision" in msg
    if not zoo_dir:  # the fix the message gives works: run it, and the checkpoint loads
        code = re.search(r'`python -c "(.+?)"`', msg)
        assert code is not None, msg
        exec(code.group(1))
        load_model(ModelConfig(name="q", spec=f"hf:{d}", device="cpu")).close()


@needs_torchvision
@pytest.mark.parametrize("name", [n for n in ZOO if (zoo_store.CHECKPOINTS / n / PROCESSOR_FILE).exists()])
def test_torchvision_and_pil_processors_give_the_same_pixels(name: str) -> None:
    """The two backends feed a model nearly the same input: their bicubic resizes round differently, so
    a few pixels differ, by at most two grey levels; scores measured on a machine with torchvision and
    on one without are comparable, though not bit-identical."""
    import importlib

    import transformers
    from PIL import Image

    d = zoo_store.CHECKPOINTS / name
    # transformers leaves AutoProcessor.from_pretrained unannotated
    improc = transformers.AutoProcessor.from_pretrained(d).image_processor  # type: ignore[no-untyped-call]
    module = importlib.import_module(
        type(improc).__module__.replace("image_processing_", "image_processing_pil_")
    )
    pil = getattr(module, type(improc).__name__ + "Pil").from_dict(improc.to_dict())
    images = [Image.fromarray(a) for a in tiny_images(4, seed=2)]
    a = improc(images, return_tensors="pt")["pixel_values"].numpy()
    b = pil(images, return_tensors="pt")["pixel_values"].numpy()
    assert a.shape == b.shape
    # In uint8 steps: undo each channel's normalisation. Both layouts are channel-major per row:
    # (n, 3, H, W) images and Qwen's (patches, 3 * temporal * patch * patch) rows.
    std = np.asarray(improc.image_std)[None, :, None]
    levels = np.abs(a - b).reshape(a.shape[0], 3, -1) * 255 * std
    assert levels.max() <= 2.001
    assert (levels > 0.01).mean() < 0.01

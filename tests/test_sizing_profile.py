"""`argus profile --size-only` on a directory holding only CLIP ViT-B/32's published config.json gives the
published parameter count and the FLOPs that a full `argus profile` counts on the same architecture with
random weights materialised, its processor and one sample of the same shape."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

from argus_eval.cli import main
from argus_eval.models.presets import PUBLISHED
from argus_eval.testing.tiny import CLIP_CHARS, _clip_tokenizer
from hardening_fixtures import write_image

CLIP_PARAMS = 151_277_313  # the published checkpoint's count


def _argus(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    monkeypatch.setattr(sys, "argv", ["argus", *argv, "--json"])
    with pytest.raises(SystemExit) as ei:
        main()
    out = capsys.readouterr()
    assert ei.value.code == 0, out.err
    return json.loads(out.out)


def _materialise(config_dir: Path, out: Path) -> None:
    """The config's architecture with seeded random weights (float16 on disk), a character-level CLIP
    tokenizer and the standard 224-pixel CLIP image processor."""
    import transformers as tf
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    cfg = tf.CLIPConfig.from_dict(json.loads((config_dir / "config.json").read_text()))
    with torch.device("meta"):
        model = tf.CLIPModel(cfg)
    model = model.to_empty(device="cpu")
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02, generator=gen)
    # transformers leaves PreTrainedModel.half and CLIPProcessor.__init__ unannotated
    model.half().save_pretrained(out)  # type: ignore[no-untyped-call]
    tok = _clip_tokenizer(out)
    processor = tf.CLIPProcessor(image_processor=CLIPImageProcessorPil(), tokenizer=tok)  # type: ignore[no-untyped-call]
    processor.save_pretrained(out)


def _dataset(root: Path, caption: str) -> dict[str, Any]:
    images = root / "images"
    images.mkdir(parents=True)
    write_image(images / "im0.png", seed=0, size=64)
    entry = {"filename": "im0.png", "imgid": 0, "split": "test", "sentences": [{"raw": caption, "sentid": 0}]}
    ann = root / "dataset_coco.json"
    ann.write_text(json.dumps({"images": [entry]}))
    return {"name": "one", "format": "karpathy", "annotations": str(ann), "images": str(images)}


def test_size_only_on_a_config_only_directory_equals_a_full_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    only = tmp_path / "config-only"
    only.mkdir()
    shutil.copy(PUBLISHED / "clip-vit-b32.json", only / "config.json")
    sized = _argus(monkeypatch, capsys, "profile", "--size-only", "-m", f"hf:{only}", "--task", "retrieval")
    assert sized["params"] == CLIP_PARAMS
    ref = sized["tasks"]["retrieval"]
    assert ref["protocol"] == "embed" and "224x224" in ref["inputs"] and "16 tokens" in ref["inputs"]

    full_dir = tmp_path / "random-weights"
    _materialise(only, full_dir)
    # a caption of 3 one-character words: start, 3 words, end = 5 tokens, padded to the 16-token bucket
    caption = " ".join(CLIP_CHARS[:3])
    config = {
        "name": "equal",
        "models": [{"name": "clip", "spec": f"hf:{full_dir}", "device": "cpu"}],
        "datasets": [_dataset(tmp_path / "data", caption)],
        "tasks": ["retrieval"],
    }
    cfg_path = tmp_path / "run.yaml"
    cfg_path.write_text(yaml.safe_dump(config))
    timing = ("--trials", "1", "--repeats", "1", "--warmup", "0", "--batch-size", "1")
    full = _argus(monkeypatch, capsys, "profile", "-m", "clip", "-c", str(cfg_path), *timing)
    assert full["params"] == CLIP_PARAMS
    assert full["flops_per_sample"] == ref["flops_per_sample"]
    assert len(full["trials"]) == 1
    # the same weights are read (float32): every weight but the logit scale, except that of the text
    # token table (49408 x 512) and position table (77 x 512) only the 16 rows looked up
    read = CLIP_PARAMS - 49408 * 512 - 77 * 512 - 1 + 2 * 16 * 512
    assert sum(p["weight_bytes"] for p in full["passes"]) == ref["weight_bytes_read"] == 4 * read

"""BLIP adapters (ITM, captioning, VQA) on tiny random checkpoints loaded through load_model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from argus_eval.errors import ModelLoadError
from argus_eval.models.loading import load_model
from argus_eval.models.protocols import (
    CAPTION,
    EMBED,
    GENERATE,
    SCORE_PAIRS,
    Embedder,
    Generator,
    Model,
    PairScorer,
)
from argus_eval.models.spec import ModelConfig
from model_fixtures import TEXTS, load_tiny, tiny_dir, tiny_images

PROMPTS = ["", "a photo of", "", "a red", "two large", "", "a", "the small", ""]
QUESTIONS = ["what color is the ball?", "how many objects are there?", "is it red?", "yes?"] * 2 + ["a"]


def test_blip_itm_scores_and_embeddings() -> None:
    m8, m1 = load_tiny("blip-itm", batch_size=8), load_tiny("blip-itm", batch_size=1)
    assert m8.info.capabilities == frozenset({EMBED, SCORE_PAIRS})
    assert isinstance(m8, PairScorer) and isinstance(m8, Embedder)
    ims = tiny_images(9)
    s8 = m8.score_pairs(ims, TEXTS)
    assert s8.shape == (9,) and s8.dtype == np.float32 and ((s8 > 0) & (s8 < 1)).all()
    np.testing.assert_allclose(m1.score_pairs(ims, TEXTS), s8, atol=1e-5)
    e8, t8 = m8.embed_images(ims), m8.embed_texts(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(e8, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(m1.embed_images(ims), e8, atol=1e-5)
    np.testing.assert_allclose(m1.embed_texts(TEXTS), t8, atol=1e-5)


@pytest.mark.parametrize(
    ("family", "prompts", "capability"),
    [("blip-caption", PROMPTS, CAPTION), ("blip-vqa", QUESTIONS, GENERATE)],
)
def test_blip_generation_batch_invariant(family: str, prompts: list[str], capability: str) -> None:
    m8: Model = load_tiny(family, batch_size=8)  # a Model, which the check below narrows to a Generator
    m1 = load_tiny(family, batch_size=1)
    assert m8.info.capabilities == frozenset({capability}) and isinstance(m8, Generator)
    ims = tiny_images(9, seed=1)
    out8 = m8.generate(ims, prompts, 5)
    assert len(out8) == 9 and all(isinstance(s, str) for s in out8)
    assert any(out8)
    assert all(len(s.split()) <= 5 + 2 for s in out8)  # new tokens only (punctuation may split words)
    assert m1.generate(ims, prompts, 5) == out8
    assert m8.generate(ims, prompts, 5) == out8  # deterministic
    assert m1.forward_calls >= 9 > m8.forward_calls / 2


def test_blip_wrong_head_is_load_error(tmp_path: Path) -> None:
    d = tmp_path / "b"
    shutil.copytree(tiny_dir("blip-vqa"), d)
    cfg = json.loads((d / "config.json").read_text())
    cfg["architectures"] = ["BlipModel"]
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError, match="BlipModel"):
        load_model(ModelConfig(name="b", spec=f"hf:{d}", device="cpu"))

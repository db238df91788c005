"""Dual-encoder adapter (CLIP) on a tiny random checkpoint loaded through load_model."""

from __future__ import annotations

import numpy as np
import pytest

from argus_eval.models.protocols import EMBED, SCORE_PAIRS, Embedder, Model, PairScorer
from model_fixtures import TEXTS, load_tiny, tiny_images


@pytest.fixture(scope="module")
def clip8():  # type: ignore[no-untyped-def]
    return load_tiny("clip", batch_size=8)


def test_clip_protocols_and_shapes(clip8) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(clip8, Model) and isinstance(clip8, Embedder) and isinstance(clip8, PairScorer)
    assert clip8.info.capabilities == frozenset({EMBED, SCORE_PAIRS})
    assert clip8.info.family == "clip"
    ims = tiny_images(9)
    before = clip8.forward_calls
    ei = clip8.embed_images(ims)
    et = clip8.embed_texts(TEXTS)
    assert clip8.forward_calls - before == 4  # 9 items at batch 8: two image and two text forwards
    assert ei.dtype == np.float32 and et.dtype == np.float32
    assert ei.shape == (9, 16) and et.shape == (9, 16)
    np.testing.assert_allclose(np.linalg.norm(ei, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(et, axis=1), 1.0, atol=1e-5)
    s = clip8.score_pairs(ims, TEXTS)
    np.testing.assert_allclose(s, (ei * et).sum(axis=1), atol=1e-6)


def test_clip_batch_size_invariance(clip8) -> None:  # type: ignore[no-untyped-def]
    clip1 = load_tiny("clip", batch_size=1)
    ims = tiny_images(9, seed=3)
    np.testing.assert_allclose(clip1.embed_images(ims), clip8.embed_images(ims), atol=1e-5)
    np.testing.assert_allclose(clip1.embed_texts(TEXTS), clip8.embed_texts(TEXTS), atol=1e-5)
    np.testing.assert_allclose(clip1.score_pairs(ims, TEXTS), clip8.score_pairs(ims, TEXTS), atol=1e-5)


def test_clip_deterministic_and_empty(clip8) -> None:  # type: ignore[no-untyped-def]
    ims = tiny_images(3, seed=5)
    np.testing.assert_array_equal(clip8.embed_images(ims), clip8.embed_images(ims))
    before = clip8.forward_calls
    assert clip8.score_pairs([], []).shape == (0,)
    assert clip8.forward_calls == before

"""Scoring texts as continuations of one cached image+prompt prefix equals the full per-pair pass."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from argus_eval.models.protocols import POOL, Pooler
from argus_eval.models.vlm_prefix import continuation_ids, group_items
from model_fixtures import TEXTS, load_tiny, tiny_images

FAMILIES = ["gemma3", "qwen2_5_vl"]


@pytest.fixture(scope="module", params=FAMILIES)
def model(request: pytest.FixtureRequest) -> Any:
    return load_tiny(request.param, batch_size=4)


def _gallery_pairs(n_images: int) -> tuple[list[np.ndarray], list[str]]:
    """Every image against every text (plus an empty one), one array object repeated per image."""
    texts = [*TEXTS, ""]
    images = [im for im in tiny_images(n_images, seed=3) for _ in texts]
    return images, texts * n_images


def test_cached_scores_equal_per_pair_path(model: Any) -> None:
    images, texts = _gallery_pairs(3)
    encoded: list[int] = []
    original = model._prefix.prefixes

    def counting(images: Any, contexts: Any) -> Any:
        encoded.extend(range(len(images)))
        return original(images, contexts)

    model._prefix.prefixes = counting
    try:
        cached = model.score_pairs(images, texts)
    finally:
        model._prefix.prefixes = original
    reference = model.score_pairs_per_pair(images, texts)
    assert len(encoded) == 3  # the image and prompt encoded once per image, not once per text
    assert np.isneginf(cached[9::10]).all() and np.isneginf(reference[9::10]).all()  # empty text
    finite = np.isfinite(reference)
    np.testing.assert_allclose(cached[finite], reference[finite], rtol=0, atol=1e-5)
    for row in range(3):
        a, b = cached[row * 10 : row * 10 + 9], reference[row * 10 : row * 10 + 9]
        assert list(np.argsort(-a, kind="stable")) == list(np.argsort(-b, kind="stable"))


def test_equal_images_share_a_prefix_across_objects(model: Any) -> None:
    im = tiny_images(1, seed=5)[0]
    images = [im.copy() for _ in TEXTS]  # equal content, distinct objects
    groups = group_items(images, ["ctx"] * len(images))
    assert list(groups.values()) == [list(range(len(TEXTS)))]
    np.testing.assert_allclose(
        model.score_pairs(images, TEXTS), model.score_pairs_per_pair(images, TEXTS), atol=1e-5
    )


def test_single_pairs_and_mixed_groups(model: Any) -> None:
    """Singleton groups take the full path; mixing them with shared images changes no score."""
    ims = tiny_images(4, seed=6)
    images = [ims[0], ims[1], ims[1], ims[2], ims[1], ims[3]]
    texts = TEXTS[:6]
    np.testing.assert_allclose(
        model.score_pairs(images, texts), model.score_pairs_per_pair(images, texts), atol=1e-5
    )


def test_continuation_ids_follow_the_full_tokenisation() -> None:
    vocab = {"ab": 9, "a": 1, "b": 2, "c": 3}

    def tok(s: str) -> list[int]:  # greedy longest match: "a"+"b" merges into "ab"
        out, i = [], 0
        while i < len(s):
            w = s[i : i + 2] if s[i : i + 2] in vocab else s[i]
            out.append(vocab[w])
            i += len(w)
        return out

    assert continuation_ids(tok, "c", "ab") == [9]
    assert continuation_ids(tok, "a", "bc") is None  # the boundary merge changes the context's tokens
    assert continuation_ids(tok, "c", "") == []


def test_pooled_vectors(model: Any) -> None:
    assert POOL in model.info.capabilities and isinstance(model, Pooler)
    img = model.pool_images(tiny_images(3))
    txt = model.pool_texts(["a red cube", "", "the gray cylinder"])
    assert img.shape[0] == 3 and txt.shape == (3, img.shape[1])
    norms = np.linalg.norm(img, axis=1)  # unit, or zero (tiny Gemma's projector starts at zero)
    assert np.all((np.abs(norms - 1) < 1e-5) | (norms == 0))
    assert np.linalg.norm(txt[1]) == 0.0
    # batch-invariant: one image at a time gives the same vectors
    np.testing.assert_allclose(
        np.concatenate([model.pool_images([im]) for im in tiny_images(3)]), img, atol=1e-5
    )


def test_batched_prefixes_and_mixed_continuation_rows(model: Any) -> None:
    """Images of one shape share a prefix pass; continuation passes mix their rows (small chunks here)."""
    rng = np.random.default_rng(9)
    ims = [rng.integers(0, 256, (30, 30, 3), dtype=np.uint8) for _ in range(3)]
    images = [im for im in ims for _ in TEXTS]
    texts = TEXTS * 3
    old = model._prefix.max_rows
    model._prefix.max_rows = 5
    try:
        before = model.forward_calls
        cached = model.score_pairs(images, texts)
        passes = model.forward_calls - before
    finally:
        model._prefix.max_rows = old
    np.testing.assert_allclose(cached, model.score_pairs_per_pair(images, texts), rtol=0, atol=1e-5)
    # one prefix pass for all three images, then chunks of 5 rows (all-one-token chunks need no pass)
    assert 1 + 2 <= passes <= 1 + -(-len(texts) // 5)


def test_repeated_text_under_one_image_scores_identically(model: Any) -> None:
    """Galleries repeat captions: equal pairs must tie exactly, as they do on the per-pair path."""
    im = tiny_images(1, seed=8)[0]
    texts = [TEXTS[1], TEXTS[4], TEXTS[1], TEXTS[0], TEXTS[4]]
    got = model.score_pairs([im] * len(texts), texts)
    assert got[0] == got[2] and got[1] == got[4]

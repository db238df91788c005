"""Dual encoders embed each text and image once per model, with vectors that do not depend on history."""

from __future__ import annotations

import numpy as np
import torch

from argus_eval.models.embed_memo import bypassed, fixed_chunks
from model_fixtures import TEXTS, load_tiny, tiny_images


def test_repeats_cost_no_forward_and_give_the_same_bits() -> None:
    clip = load_tiny("clip", batch_size=4)
    ims = tiny_images(5, seed=11)
    t1, i1 = clip.embed_texts(TEXTS), clip.embed_images(ims)
    before = clip.forward_calls
    t2 = clip.embed_texts(list(reversed(TEXTS)) + TEXTS[:2])
    i2 = clip.embed_images([im.copy() for im in ims])  # equal content, new objects
    assert clip.forward_calls == before
    np.testing.assert_array_equal(t2[: len(TEXTS)], t1[::-1])
    np.testing.assert_array_equal(i2, i1)


def test_vectors_do_not_depend_on_what_else_was_missing() -> None:
    """A resumed run meets other inputs first; each vector must still come out bit-identical."""
    alone, mixed = load_tiny("clip", batch_size=4), load_tiny("clip", batch_size=4)
    mixed.embed_texts(TEXTS[3:])  # other texts (and a partial chunk) first
    mixed.embed_images(tiny_images(3, seed=12))
    np.testing.assert_array_equal(mixed.embed_texts(TEXTS), alone.embed_texts(TEXTS))
    ims = tiny_images(6, seed=13)
    np.testing.assert_array_equal(mixed.embed_images(ims), alone.embed_images(ims))


def test_memo_equals_a_bare_forward() -> None:
    clip = load_tiny("clip", batch_size=4)
    got = clip.embed_texts(TEXTS)
    with torch.inference_mode():
        enc = clip.processor(text=TEXTS, padding=True, truncation=True, return_tensors="pt")
        feats = clip.model.get_text_features(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
        feats = getattr(feats, "pooler_output", feats)
        want = torch.nn.functional.normalize(feats, dim=-1).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_fixed_chunks_fill_the_last_chunk() -> None:
    assert fixed_chunks(5, 2) == [[0, 1], [2, 3], [4, 4]]
    assert fixed_chunks(0, 3) == []
    with bypassed():  # profiling: a timed batch of one costs one row, not a whole chunk
        assert fixed_chunks(5, 2) == [[0, 1], [2, 3], [4]]
        assert fixed_chunks(1, 32) == [[0]]


def test_bypassed_computes_afresh() -> None:
    """Profiling times the model inside bypassed(): every call forwards, and gives the memo's vectors
    (to float tolerance: the unfilled last chunk has another batch shape; nothing bypassed is stored)."""
    clip = load_tiny("clip", batch_size=4)
    want = clip.embed_texts(TEXTS)
    before = clip.forward_calls
    with bypassed():
        got = clip.embed_texts(TEXTS)
    assert clip.forward_calls - before == 3  # 9 texts at batch 4
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_lxmert_region_features_once_per_image() -> None:
    lx = load_tiny("lxmert-vqa", batch_size=4)
    ims = tiny_images(3, seed=14)
    seen: list[int] = []
    original = lx.region_provider.regions

    def counting(images: list[np.ndarray]) -> object:
        seen.append(len(images))
        return original(images)

    lx.region_provider.regions = counting
    questions = ["what color is the cube?"] * 6
    first = lx.classify([*ims, *ims], questions)  # each image asked twice
    again = lx.classify([im.copy() for im in ims], questions[:3])
    assert sum(seen) == 3
    np.testing.assert_allclose(again, first[:3], atol=1e-5)  # the model's batch of 6 vs 3: rounding only
    with bypassed():  # profiling: computed afresh, same values
        np.testing.assert_array_equal(lx.classify(ims, questions[:3]), again)
    assert sum(seen) == 6


def test_text_width_follows_its_own_length() -> None:
    """Each text pads to the next multiple of TEXT_BUCKET tokens (capped), whatever else is in the call."""
    from argus_eval.models.hf_dual import TEXT_BUCKET

    clip = load_tiny("clip", batch_size=4)
    cap = clip._max_text
    assert clip._text_width(1) == min(cap, TEXT_BUCKET)
    assert clip._text_width(TEXT_BUCKET + 1) == min(cap, 2 * TEXT_BUCKET)
    assert clip._text_width(10 * cap) == cap

"""Generative VLM adapter (Gemma-3, Qwen2.5-VL) on tiny random checkpoints loaded through load_model."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from argus_eval.models.hf_vlm import VLMAdapter
from argus_eval.models.protocols import CHOOSE, GENERATE, POOL, SCORE_PAIRS, Chooser, Generator, PairScorer
from model_fixtures import TEXTS, load_tiny, tiny_images

FAMILIES = ["gemma3", "qwen2_5_vl"]
OPTIONS = [["yes", "no"], ["red", "blue", "a big red cube"], ["one"], ["two", "three"]] * 2 + [["a", "b c d"]]


@pytest.fixture(scope="module", params=FAMILIES)
def pair(request: pytest.FixtureRequest) -> tuple[Any, Any]:
    """The same tiny checkpoint at batch size 8 and 1."""
    return load_tiny(request.param, batch_size=8), load_tiny(request.param, batch_size=1)


def test_capabilities(pair: tuple[VLMAdapter, VLMAdapter]) -> None:
    m8, _ = pair
    assert m8.info.capabilities == frozenset({GENERATE, CHOOSE, SCORE_PAIRS, POOL})
    assert isinstance(m8, Generator) and isinstance(m8, Chooser) and isinstance(m8, PairScorer)
    assert m8.tokenizer.padding_side == "left"


def test_generate_batch_invariant(pair: tuple[Any, Any]) -> None:
    m8, m1 = pair
    ims = tiny_images(9)
    before = m8.forward_calls
    out8 = m8.generate(ims, TEXTS, 4)
    assert m8.forward_calls - before == 2
    assert len(out8) == 9 and any(out8)
    assert all(len(s.split()) <= 4 for s in out8)  # only new tokens, special tokens stripped
    assert not any("<" in s for s in out8)
    assert m1.generate(ims, TEXTS, 4) == out8


def test_choose_and_score_batch_invariant(pair: tuple[Any, Any]) -> None:
    m8, m1 = pair
    ims = tiny_images(9, seed=2)
    c8, c1 = m8.choose(ims, TEXTS, OPTIONS), m1.choose(ims, TEXTS, OPTIONS)
    assert [len(c) for c in c8] == [len(o) for o in OPTIONS]
    for a, b in zip(c8, c1, strict=True):
        assert a.dtype == np.float32 and (a < 0).all()
        np.testing.assert_allclose(a, b, atol=1e-5)
    s8, s1 = m8.score_pairs(ims, TEXTS), m1.score_pairs(ims, TEXTS)
    assert s8.shape == (9,) and np.isfinite(s8).all()
    np.testing.assert_allclose(s8, s1, atol=1e-5)


def test_choose_matches_bare_forward(pair: tuple[Any, Any]) -> None:
    """The adapter's option log-likelihood equals one computed by hand from a single forward pass."""
    m8, _ = pair
    im = tiny_images(1, seed=4)[0]
    prompt, option = "what color is the ball?", "a big red cube"
    ctx = m8._chat(prompt)
    enc = m8._encode([im], [ctx + option])
    k = len(m8.tokenizer(option, add_special_tokens=False)["input_ids"])
    with torch.inference_mode():
        logp = torch.log_softmax(m8.model(**enc).logits.float()[0], dim=-1)
    ids = enc["input_ids"][0]
    n = ids.shape[0]
    expected = sum(float(logp[t - 1, ids[t]]) for t in range(n - k, n))
    got = m8.choose([im], [prompt], [[option]])[0][0]
    assert got == pytest.approx(expected, abs=1e-4)


def test_config_caps_new_tokens() -> None:
    m = load_tiny("qwen2_5_vl", batch_size=4, max_new_tokens=1)
    assert all(len(s.split()) <= 1 for s in m.generate(tiny_images(3), TEXTS[:3], 6))

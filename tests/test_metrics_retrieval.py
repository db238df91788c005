"""Retrieval metrics against hand-computed small cases and a brute-force reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from argus_eval.errors import MetricError
from argus_eval.metrics import retrieval
from argus_eval.metrics.retrieval import (
    five_fold_1k,
    mean_rank,
    median_rank,
    recall_at_k,
    retrieval_ranks,
    similarity,
)


def _brute_ranks(sim: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Independent loop reference: pos is (n_texts, n_images) bool; ties count against the query."""
    n_i, n_t = sim.shape
    ri = np.empty(n_i, dtype=int)
    for i in range(n_i):
        best = max(sim[i, t] for t in range(n_t) if pos[t, i])
        ri[i] = sum(1 for t in range(n_t) if not pos[t, i] and sim[i, t] >= best)
    rt = np.empty(n_t, dtype=int)
    for t in range(n_t):
        best = max(sim[i, t] for i in range(n_i) if pos[t, i])
        rt[t] = sum(1 for i in range(n_i) if not pos[t, i] and sim[i, t] >= best)
    return ri, rt


def test_hand_computed_3x6() -> None:
    # 3 images, 2 texts each: texts 0,1 -> img 0; 2,3 -> img 1; 4,5 -> img 2.
    sim = np.array(
        [
            [0.9, 0.1, 0.8, 0.2, 0.3, 0.0],  # img0: best positive 0.9 -> rank 0
            [0.5, 0.6, 0.1, 0.4, 0.7, 0.2],  # img1: best positive 0.4; negatives >= 0.4: .5 .6 .7 -> 3
            [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],  # img2: best positive 0.6 -> rank 0
        ]
    )
    t2i = np.array([0, 0, 1, 1, 2, 2])
    ri, rt = retrieval_ranks(sim, t2i)
    assert ri.tolist() == [0, 3, 0]
    # text columns: t0 (.9,.5,.1) pos img0 -> 0; t1 (.1,.6,.2) pos img0 -> 2; t2 (.8,.1,.3) pos img1 -> 2
    # t3 (.2,.4,.4) pos img1 -> tie with img2 counts against -> 1; t4 (.3,.7,.5) pos img2 -> 1;
    # t5 (0,.2,.6) pos img2 -> 0
    assert rt.tolist() == [0, 2, 2, 1, 1, 0]
    r = recall_at_k(sim, t2i, ks=(1, 2, 5))
    assert r["i2t_R@1"] == pytest.approx(2 / 3)
    assert r["i2t_R@2"] == pytest.approx(2 / 3)
    assert r["i2t_R@5"] == 1.0
    assert r["t2i_R@1"] == pytest.approx(2 / 6)
    assert r["t2i_R@2"] == pytest.approx(4 / 6)
    assert r["t2i_R@5"] == 1.0
    assert set(r) == {"i2t_R@1", "i2t_R@2", "i2t_R@5", "t2i_R@1", "t2i_R@2", "t2i_R@5"}


def test_all_ties_are_conservative() -> None:
    sim = np.zeros((4, 4))
    ri, rt = retrieval_ranks(sim, np.arange(4))
    assert ri.tolist() == [3, 3, 3, 3]
    assert rt.tolist() == [3, 3, 3, 3]
    assert recall_at_k(sim, np.arange(4), ks=(1,))["i2t_R@1"] == 0.0


def test_multi_positive() -> None:
    # text 1 is true of images 0 and 1 (e.g. "a dog" for two dog pictures).
    sim = np.array([[0.2, 0.7, 0.9], [0.8, 0.6, 0.1]])
    t2i = np.array([0, 1, 1])
    pos = np.array([[1, 0], [1, 1], [0, 1]], dtype=bool)
    ri, rt = retrieval_ranks(sim, t2i, positives=pos)
    # img0 positives t0 (.2), t1 (.7): best .7, negative t2=.9 -> 1; img1 positives t1,t2: best .6,
    # negative t0=.8 -> 1.
    assert ri.tolist() == [1, 1]
    # t0: pos img0 .2, neg img1 .8 -> 1; t1: both images positive -> 0; t2: pos img1 .1, neg .9 -> 1
    assert rt.tolist() == [1, 0, 1]
    # sparse positives give the same
    ri2, rt2 = retrieval_ranks(sim, t2i, positives=sp.csr_matrix(pos))
    assert ri2.tolist() == ri.tolist() and rt2.tolist() == rt.tolist()
    # without multi-positive truth, t1 is only image 1's text: img0's .7 beats .6 -> rank 1
    _, rt3 = retrieval_ranks(sim, t2i)
    assert rt3.tolist() == [1, 1, 1]


def test_random_matches_brute_force_with_small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    monkeypatch.setattr(retrieval, "_CHUNK_ELEMENTS", 37)  # force many chunks, including ragged ones
    n_i, n_t = 13, 40
    # coarse values so ties happen often
    sim = rng.integers(0, 5, size=(n_i, n_t)).astype(np.float32)
    t2i = np.concatenate([np.arange(n_i), rng.integers(0, n_i, size=n_t - n_i)])
    pos = np.zeros((n_t, n_i), dtype=bool)
    pos[np.arange(n_t), t2i] = True
    pos |= rng.random((n_t, n_i)) < 0.1
    for p in (None, pos):
        truth = pos if p is not None else np.eye(n_i, dtype=bool)[t2i]
        ri, rt = retrieval_ranks(sim, t2i, positives=p)
        bi, bt = _brute_ranks(sim, truth)
        assert ri.tolist() == bi.tolist()
        assert rt.tolist() == bt.tolist()


def test_nan_names_row() -> None:
    sim = np.ones((3, 3))
    sim[2, 1] = np.nan
    with pytest.raises(MetricError, match="row 2"):
        recall_at_k(sim, np.arange(3))
    sim[2, 1] = np.inf
    with pytest.raises(MetricError, match="row 2"):
        retrieval_ranks(sim, np.arange(3))


def test_bad_inputs() -> None:
    with pytest.raises(MetricError, match="image 1 has no positive"):
        retrieval_ranks(np.ones((2, 2)), np.array([0, 0]))
    with pytest.raises(MetricError, match="text_to_image"):
        retrieval_ranks(np.ones((2, 2)), np.array([0, 5]))
    with pytest.raises(MetricError, match="positives has shape"):
        retrieval_ranks(np.ones((2, 3)), np.array([0, 1, 1]), positives=np.ones((2, 3), dtype=bool))


def test_mean_median_rank() -> None:
    assert mean_rank(np.array([0, 1, 5])) == pytest.approx(3.0)
    assert median_rank(np.array([0, 1, 5, 9])) == pytest.approx(4.0)


def test_five_fold_matches_per_fold_average() -> None:
    rng = np.random.default_rng(1)
    n_img, per = 50, 2  # 5 folds of 10 images
    t2i = np.repeat(np.arange(n_img), per)
    sim = rng.normal(size=(n_img, n_img * per))
    sim[t2i, np.arange(t2i.size)] += 1.5
    out = five_fold_1k(sim, t2i, ks=(1, 5))
    expect: dict[str, float | np.floating[Any]] = {}
    for f in range(5):
        ri, rt = _brute_ranks(
            sim[f * 10 : (f + 1) * 10, f * 20 : (f + 1) * 20], np.eye(10, dtype=bool)[t2i[:20]]
        )
        for k in (1, 5):
            expect[f"i2t_R@{k}"] = expect.get(f"i2t_R@{k}", 0.0) + np.mean(ri < k) / 5
            expect[f"t2i_R@{k}"] = expect.get(f"t2i_R@{k}", 0.0) + np.mean(rt < k) / 5
    assert out.keys() == expect.keys()
    for key in out:
        assert out[key] == pytest.approx(expect[key], abs=1e-12)
    with pytest.raises(MetricError, match="equal folds"):
        five_fold_1k(sim[:49], t2i[t2i < 49])


def test_chance_recall_matches_hand_counts_and_a_random_ranking_simulation() -> None:
    from argus_eval.metrics.retrieval import chance_recall_at_k

    one_hot = np.eye(10, dtype=bool)
    assert chance_recall_at_k(one_hot, 1) == pytest.approx(0.1)
    assert chance_recall_at_k(one_hot, 5) == pytest.approx(0.5)
    # 2 positives of 4 candidates, k=2: miss only when both picks are the 2 negatives, 1/C(4,2) = 1/6.
    two = np.array([[True, True, False, False]])
    assert chance_recall_at_k(two, 2) == pytest.approx(5 / 6)
    assert chance_recall_at_k(np.ones((3, 4), dtype=bool), 1) == 1.0
    rng = np.random.default_rng(0)
    truth = rng.random((40, 30)) < 0.1
    hits = 0
    trials = 2000
    for _ in range(trials):
        top = np.argsort(rng.random(truth.shape), axis=1)[:, :5]
        hits += int(np.take_along_axis(truth, top, axis=1).any(axis=1).sum())
    assert chance_recall_at_k(truth, 5) == pytest.approx(hits / (trials * 40), abs=0.01)


def test_similarity_ties_equal_vectors_whatever_their_row() -> None:
    """A float32 BLAS product rounds a row by its place in the kernel's block (17 identical rows of a
    product score a text differently); the similarity must give equal vectors equal scores, and a row
    the same score alone as in a batch, so a batch of 1 and a batch of 17 rank alike."""
    rng = np.random.default_rng(0)
    v = rng.standard_normal(256).astype(np.float32)
    v /= np.linalg.norm(v)
    texts = rng.standard_normal((80, 256)).astype(np.float32)
    rows = np.tile(v, (17, 1))
    sims = similarity(rows, texts)
    assert sims.dtype == np.float32 and sims.shape == (17, 80)
    assert np.ptp(sims, axis=0).max() == 0.0  # every text ties across the equal images
    assert np.array_equal(sims[5], similarity(v[None, :], texts)[0])
    expected = (v.astype(np.float64)[None, :] @ texts.astype(np.float64).T).astype(np.float32)
    assert np.array_equal(sims[:1], expected)
    # the tied images rank the same for a text under either batch: each text's rank counts its ties
    t2i = np.arange(80) % 17
    ranks_17 = retrieval_ranks(sims, t2i)[1]
    ranks_1 = retrieval_ranks(np.vstack([similarity(r[None, :], texts) for r in rows]), t2i)[1]
    assert np.array_equal(ranks_17, ranks_1)

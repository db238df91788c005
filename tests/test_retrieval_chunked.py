"""Chunked retrieval ranking (metrics/retrieval_chunked.py) against the dense matrix path, bit for bit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.typing import NDArray

from argus_eval.data.types import Dataset, Sample
from argus_eval.errors import MetricError
from argus_eval.metrics import retrieval_chunked
from argus_eval.metrics.retrieval import recall_from_ranks, retrieval_ranks, similarity
from argus_eval.metrics.retrieval_chunked import embedding_ranks
from argus_eval.tasks.base import CellResult
from argus_eval.tasks.records import Record
from argus_eval.tasks.registry import make_tasks, parse_tasks
from argus_eval.tasks.retrieval import RetrievalTask

N_IMG, PER = 13, 3


def _tied_data(
    seed: int,
) -> tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.int64], sp.csr_matrix]:
    """Coarse integer vectors (many exact ties), repeated image and text vectors, multi-positive truth."""
    rng = np.random.default_rng(seed)
    img = rng.integers(-1, 2, size=(N_IMG, 4)).astype(np.float32)
    img[5] = img[2]  # duplicate images
    img[9] = img[2]
    txt = rng.integers(-1, 2, size=(N_IMG * PER, 4)).astype(np.float32)
    txt[7] = txt[1]  # duplicate texts
    t2i = np.repeat(np.arange(N_IMG), PER)
    pos = np.zeros((N_IMG * PER, N_IMG), dtype=bool)
    pos[np.arange(t2i.size), t2i] = True
    pos |= rng.random(pos.shape) < 0.15
    return img, txt, t2i, sp.csr_matrix(pos)


def _smooth_data(seed: int) -> tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.int64], None]:
    """Gaussian float32 vectors: float64 sums with rounding, no designed ties; one-hot truth."""
    rng = np.random.default_rng(seed)
    img = rng.standard_normal((N_IMG, 96)).astype(np.float32)
    txt = rng.standard_normal((N_IMG * PER, 96)).astype(np.float32)
    return img, txt, np.repeat(np.arange(N_IMG), PER), None


@pytest.mark.parametrize("rows", [1, 7, N_IMG + 5])
@pytest.mark.parametrize("make", [_tied_data, _smooth_data])
def test_ranks_and_top_texts_equal_the_dense_matrix(rows: int, make: Any) -> None:
    for seed in range(4):
        img, txt, t2i, pos = make(seed)
        sim = similarity(img, txt)
        want_i, want_t = retrieval_ranks(sim, t2i, positives=pos)
        got = embedding_ranks(img, txt, t2i, positives=pos, rows_per_block=rows)
        assert got.i2t.tolist() == want_i.tolist()
        assert got.t2i.tolist() == want_t.tolist()
        assert got.top_text.tolist() == np.argmax(sim, axis=1).tolist()
        assert recall_from_ranks(got.i2t) == recall_from_ranks(want_i)
        assert recall_from_ranks(got.t2i) == recall_from_ranks(want_t)


def test_ties_count_against_the_query_in_every_block() -> None:
    # every score equal: each query's rank is its number of negatives, whichever block holds them
    img, txt = np.ones((4, 2), np.float32), np.ones((8, 2), np.float32)
    got = embedding_ranks(img, txt, np.repeat(np.arange(4), 2), rows_per_block=3)
    assert got.i2t.tolist() == [6] * 4 and got.t2i.tolist() == [3] * 8
    assert got.top_text.tolist() == [0] * 4


def test_errors_match_the_dense_path() -> None:
    img, txt, t2i, _ = _smooth_data(0)
    img[8, 3] = np.nan
    with pytest.raises(MetricError, match="row 8"):
        embedding_ranks(img, txt, t2i, rows_per_block=3)
    pos = np.zeros((t2i.size, N_IMG), dtype=bool)
    pos[np.arange(t2i.size), t2i] = True
    pos[:, 4] = False  # image 4 is true of no text
    with pytest.raises(MetricError, match="image 4 has no positive"):
        embedding_ranks(np.ones((N_IMG, 2)), np.ones((t2i.size, 2)), t2i, positives=pos, rows_per_block=2)
    with pytest.raises(MetricError, match="dimensions"):
        embedding_ranks(np.ones((2, 3)), np.ones((4, 2)), np.arange(4) // 2)
    with pytest.raises(MetricError, match="rows_per_block"):
        embedding_ranks(np.ones((2, 2)), np.ones((4, 2)), np.arange(4) // 2, rows_per_block=0)


def _samples(pos: sp.csr_matrix) -> list[Sample]:
    """Samples whose also_true_of metadata carries the extra (off-own-image) truth of pos."""
    dense = pos.toarray()
    out = []
    for i in range(N_IMG):
        also = [[f"s{j}" for j in np.flatnonzero(dense[i * PER + t]) if j != i] for t in range(PER)]
        meta = {"also_true_of": also} if any(also) else {}
        out.append(Sample(f"s{i}", f"{i}.png", tuple(f"t{i}-{t}" for t in range(PER)), metadata=meta))
    return out


def _fields(res: CellResult) -> dict[str, Any]:
    return {
        "ids": res.sample_ids,
        "predictions": res.predictions,
        "scores": res.scores,
        "references": res.references,
        "components": res.components.tobytes(),
        "finished": repr(res.finish(res.components)),
        "metrics": res.metrics,
        "breakdown": res.breakdown,
        "chance": res.chance,
    }


@pytest.mark.parametrize("block_elements", [1, 7 * N_IMG * PER, 10**9])
def test_cell_result_equals_the_dense_matrix_path(
    block_elements: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The dense reference: the same similarity matrix handed to finalize as pair-score rows, which
    # rank the whole matrix with retrieval_ranks and argmax (the path embeddings took before blocks).
    monkeypatch.setattr(retrieval_chunked, "_BLOCK_ELEMENTS", block_elements)  # 1, 7 and > n rows
    task = make_tasks(parse_tasks([{"name": "retrieval"}]))[0]
    assert isinstance(task, RetrievalTask)
    for make in (_tied_data, _smooth_data):
        img, txt, t2i, pos = make(3)
        truth = pos if pos is not None else sp.csr_matrix(np.eye(N_IMG, dtype=bool)[t2i])
        samples = _samples(truth)
        dataset = Dataset("d", samples, Path("."), "fp")
        sim = similarity(img, txt)
        by_emb = {
            s.sample_id: Record(
                s.sample_id, {"n_texts": PER}, {"image": img[i], "texts": txt[i * PER : (i + 1) * PER]}
            )
            for i, s in enumerate(samples)
        }
        by_sim = {
            s.sample_id: Record(s.sample_id, {"n_texts": PER}, {"scores": sim[i]})
            for i, s in enumerate(samples)
        }
        got = task.finalize(dataset, samples, by_emb, None)  # type: ignore[arg-type]
        want = task.finalize(dataset, samples, by_sim, None)  # type: ignore[arg-type]
        assert _fields(got) == _fields(want)
        # and the metrics are the dense ranks' recalls, computed here independently
        r_i, r_t = retrieval_ranks(sim, t2i, positives=truth)
        assert got.metrics["i2t_R@1"] == float(np.mean(r_i < 1))
        assert got.metrics["t2i_R@5"] == float(np.mean(r_t < 5))


def test_positives_from_metadata_equal_a_pair_by_pair_truth() -> None:
    from argus_eval.tasks.retrieval import _positives

    pos = _tied_data(1)[3]
    samples = _samples(pos)
    kept = [s for s in samples if s.sample_id != "s6"]  # a dropped sample: truth naming it is skipped
    index = {s.sample_id: i for i, s in enumerate(kept)}
    kept_t2i = np.repeat(np.arange(len(kept)), PER)
    want = np.zeros((kept_t2i.size, len(kept)), dtype=bool)
    t = 0
    for s in kept:
        for k in range(PER):
            want[t, index[s.sample_id]] = True
            for sid in (s.metadata.get("also_true_of") or [[]] * PER)[k]:
                if sid in index:
                    want[t, index[sid]] = True
            t += 1
    got = _positives(kept, index, kept_t2i)
    assert got.shape == want.shape and (got.toarray() == want).all()

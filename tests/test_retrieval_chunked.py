"""Block-by-block retrieval ranks from embeddings equal the dense matrix's, bit for bit."""

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
from argus_eval.metrics.retrieval import retrieval_ranks, similarity
from argus_eval.metrics.retrieval_chunked import embedding_ranks
from argus_eval.tasks.base import CellResult
from argus_eval.tasks.records import Record
from argus_eval.tasks.registry import make_tasks, parse_tasks
from argus_eval.tasks.retrieval import RetrievalTask, _positives


def _brute(sim: np.ndarray, pos: np.ndarray) -> tuple[list[int], list[int]]:
    """Loop reference: pos (n_texts, n_images) bool; negatives at or above the best positive."""
    n_i, n_t = sim.shape
    ri = [
        sum(1 for t in range(n_t) if not pos[t, i] and sim[i, t] >= max(sim[i, pos[:, i]]))
        for i in range(n_i)
    ]
    rt = [
        sum(1 for i in range(n_i) if not pos[t, i] and sim[i, t] >= max(sim[pos[t], t])) for t in range(n_t)
    ]
    return ri, rt


def _tied_data(
    seed: int, n: int, per: int, dim: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, sp.csr_matrix]:
    """Small-integer vectors (many exact ties), duplicated images and texts, extra positives."""
    rng = np.random.default_rng(seed)
    img = rng.integers(-2, 3, size=(n, dim)).astype(np.float32)
    txt = rng.integers(-2, 3, size=(n * per, dim)).astype(np.float32)
    img[1::4] = img[0]  # equal image vectors
    txt[3::5] = txt[2]  # equal text vectors, owned by different images
    t2i = np.repeat(np.arange(n), per)
    extra = rng.random((n * per, n)) < 0.05
    pos = sp.csr_matrix(extra | (np.arange(n)[None, :] == t2i[:, None]))
    return img, txt, t2i, pos


def _float_data(seed: int, n: int, per: int, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    img = rng.standard_normal((n, dim), dtype=np.float32)
    img[min(5, n - 1)] = img[2]  # a duplicate image: its scores must tie exactly with the original's
    txt = rng.standard_normal((n * per, dim), dtype=np.float32)
    return img, txt, np.repeat(np.arange(n), per)


@pytest.mark.parametrize("rows", [1, 2, 7, 1000])
def test_tied_multi_positive_equals_dense_and_brute(rows: int) -> None:
    img, txt, t2i, pos = _tied_data(0, 23, 3, 6)
    sim = similarity(img, txt)
    got = embedding_ranks(img, txt, t2i, pos, rows_per_block=rows)
    ri, rt = retrieval_ranks(sim, t2i, pos)
    assert np.array_equal(got.i2t, ri) and np.array_equal(got.t2i, rt)
    assert np.array_equal(got.top_text, np.argmax(sim, axis=1))
    bi, bt = _brute(sim, pos.toarray())
    assert got.i2t.tolist() == bi and got.t2i.tolist() == bt
    assert set(got.top_text[1::4].tolist()) == {got.top_text[0]}  # equal images: one top text


@pytest.mark.parametrize("rows", [1, 7, 500])
def test_float_vectors_equal_dense_bit_for_bit(rows: int) -> None:
    # Real gemm kernels (512-d, hundreds of rows): a block's rows must be the whole product's rows.
    img, txt, t2i = _float_data(1, 120, 5, 512)
    sim = similarity(img, txt)
    got = embedding_ranks(img, txt, t2i, rows_per_block=rows)
    ri, rt = retrieval_ranks(sim, t2i)
    assert np.array_equal(got.i2t, ri) and np.array_equal(got.t2i, rt)
    assert np.array_equal(got.top_text, np.argmax(sim, axis=1))
    assert got.top_text[5] == got.top_text[2]  # equal images: one top text


def test_one_hot_default_block_equals_dense() -> None:
    img, txt, t2i = _float_data(2, 40, 5, 32)
    got = embedding_ranks(img, txt, t2i)
    ri, rt = retrieval_ranks(similarity(img, txt), t2i)
    assert np.array_equal(got.i2t, ri) and np.array_equal(got.t2i, rt)


def test_nan_row_named_like_dense() -> None:
    img, txt, t2i = _float_data(3, 10, 2, 8)
    img[6, 3] = np.nan
    with pytest.raises(MetricError, match="row 6 "):
        retrieval_ranks(similarity(img, txt), t2i)
    with pytest.raises(MetricError, match="row 6 "):
        embedding_ranks(img, txt, t2i, rows_per_block=4)


def test_query_without_positive_named() -> None:
    img, txt, _ = _float_data(4, 4, 2, 8)
    t2i = np.array([0, 0, 1, 1, 2, 2, 2, 2])  # image 3 has no text
    with pytest.raises(MetricError, match="image 3 has no positive"):
        embedding_ranks(img, txt, t2i, rows_per_block=3)


def test_bad_shapes_refused() -> None:
    with pytest.raises(MetricError, match="same model"):
        embedding_ranks(np.ones((2, 3)), np.ones((2, 4)), np.array([0, 1]))
    with pytest.raises(MetricError, match="non-empty 2-D"):
        embedding_ranks(np.ones((0, 3)), np.ones((2, 3)), np.array([0, 1]))
    with pytest.raises(MetricError, match="rows_per_block"):
        embedding_ranks(np.ones((2, 3)), np.ones((2, 3)), np.array([0, 1]), rows_per_block=0)


def test_task_embeddings_equal_pair_score_rows_of_same_matrix() -> None:
    # The embedding path (blocks) and the pair-score path (a held matrix) must give the same cell.
    img, txt, _ = _float_data(5, 9, 3, 16)
    txt[4] = txt[0]  # a duplicate caption: the top text on its tie is the first
    samples = [
        Sample(f"s{i}", f"{i}.png", tuple(f"t{3 * i + j}" for j in range(3)), metadata={"also_true_of": also})
        for i, also in enumerate([[["s1"], [], []], [[], [], ["s0", "s8"]]] + [[[], [], []]] * 7)
    ]
    dataset = Dataset("d", samples, Path("."), "fp")
    sim = similarity(img, txt)
    emb = {
        s.sample_id: Record(s.sample_id, {"n_texts": 3}, {"image": img[i], "texts": txt[3 * i : 3 * i + 3]})
        for i, s in enumerate(samples)
    }
    rows = {
        s.sample_id: Record(s.sample_id, {"n_texts": 3}, {"scores": sim[i]}) for i, s in enumerate(samples)
    }
    task = RetrievalTask()
    proto = task.protocols()[0]
    a = task.finalize(dataset, samples, emb, proto)
    b = task.finalize(dataset, samples, rows, proto)
    assert a.predictions == b.predictions and a.scores == b.scores and a.metrics == b.metrics
    assert np.array_equal(a.components, b.components) and a.chance == b.chance
    # the extra truth reached the ranks: text 0 is also true of image 1, text 5 of images 0 and 8
    pos = np.arange(9)[None, :] == np.repeat(np.arange(9), 3)[:, None]
    pos[0, 1] = pos[5, 0] = pos[5, 8] = True
    ri, rt = retrieval_ranks(sim, np.repeat(np.arange(9), 3), pos)
    assert a.metrics["i2t_R@1"] == np.mean(ri < 1) and a.metrics["t2i_R@5"] == np.mean(rt < 5)
    assert a.metrics["t2i_mean_rank"] == rt.mean() + 1.0
    assert a.predictions == [f"t{int(j)}" for j in np.argmax(sim, axis=1)]


N_IMG, PER = 13, 3


def _cell_tied(
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


def _cell_smooth(seed: int) -> tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.int64], None]:
    """Gaussian float32 vectors: float64 sums with rounding, no designed ties; one-hot truth."""
    rng = np.random.default_rng(seed)
    img = rng.standard_normal((N_IMG, 96)).astype(np.float32)
    txt = rng.standard_normal((N_IMG * PER, 96)).astype(np.float32)
    return img, txt, np.repeat(np.arange(N_IMG), PER), None


def test_ties_count_against_the_query_in_every_block() -> None:
    # every score equal: each query's rank is its number of negatives, whichever block holds them
    img, txt = np.ones((4, 2), np.float32), np.ones((8, 2), np.float32)
    got = embedding_ranks(img, txt, np.repeat(np.arange(4), 2), rows_per_block=3)
    assert got.i2t.tolist() == [6] * 4 and got.t2i.tolist() == [3] * 8
    assert got.top_text.tolist() == [0] * 4


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
    for make in (_cell_tied, _cell_smooth):
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
    pos = _cell_tied(1)[3]
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


def _counting_blocks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = retrieval_chunked._Blocks.__call__

    def counted(self: Any, r0: int, r1: int) -> np.ndarray:
        calls.append(r0)
        return real(self, r0, r1)

    monkeypatch.setattr(retrieval_chunked._Blocks, "__call__", counted)
    return calls


def test_one_pass_when_brackets_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting_blocks(monkeypatch)
    img, txt, t2i, pos = _tied_data(6, 30, 4, 8)
    got = embedding_ranks(img, txt, t2i, pos, rows_per_block=7)
    assert len(calls) == 5  # ceil(30 / 7) blocks, each computed once
    ri, rt = retrieval_ranks(similarity(img, txt), t2i, pos)
    assert np.array_equal(got.i2t, ri) and np.array_equal(got.t2i, rt)


def test_second_pass_when_too_many_scores_inside_brackets(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting_blocks(monkeypatch)
    monkeypatch.setattr(retrieval_chunked, "_BAND_LIMIT", 0)
    img, txt, t2i, pos = _tied_data(7, 30, 4, 8)
    got = embedding_ranks(img, txt, t2i, pos, rows_per_block=7)
    assert len(calls) == 10
    ri, rt = retrieval_ranks(similarity(img, txt), t2i, pos)
    assert np.array_equal(got.i2t, ri) and np.array_equal(got.t2i, rt)


def test_second_pass_when_a_bracket_misses_the_best(monkeypatch: pytest.MonkeyPatch) -> None:
    # Brackets that hold no best score: the exact second pass must still give the dense ranks.
    calls = _counting_blocks(monkeypatch)
    img, txt, t2i = _float_data(8, 30, 4, 16)

    def wrong(a: np.ndarray, b: np.ndarray, pos_i: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
        lo = np.full(b.shape[0], 1e6, dtype=np.float32)
        return lo, lo

    monkeypatch.setattr(retrieval_chunked, "_brackets", wrong)
    got = embedding_ranks(img, txt, t2i, rows_per_block=7)
    assert len(calls) == 10
    ri, rt = retrieval_ranks(similarity(img, txt), t2i)
    assert np.array_equal(got.i2t, ri) and np.array_equal(got.t2i, rt)


def _scan_spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Per block, how many negatives fell inside the brackets (-1 once the band was dropped)."""
    kept: list[int] = []
    real = retrieval_chunked._scan

    def spied(*args: Any) -> None:
        out = args[-1]
        before = out.kept
        real(*args)
        kept.append(out.kept - before if out.band is not None else -1)

    monkeypatch.setattr(retrieval_chunked, "_scan", spied)
    return kept


@pytest.mark.parametrize("rows", [1, 7, None])
def test_band_of_exact_ties_searched_by_column(rows: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    # Negatives tied exactly with a text's best positive lie inside its bracket: they are found by
    # searching only the columns whose counts show some, in one pass, and decide the ranks exactly.
    calls, kept = _counting_blocks(monkeypatch), _scan_spy(monkeypatch)
    img, txt, t2i, pos = _tied_data(9, 40, 3, 5)
    txt[::7] = img[t2i[::7]]  # texts equal to their image: the positive is the top score, with ties
    got = embedding_ranks(img, txt, t2i, pos, rows_per_block=rows)
    sim = similarity(img, txt)
    ri, rt = retrieval_ranks(sim, t2i, pos)
    assert np.array_equal(got.i2t, ri) and np.array_equal(got.t2i, rt)
    assert np.array_equal(got.top_text, np.argmax(sim, axis=1))
    assert len(calls) == len(kept) and sum(kept) > 0 and min(kept) >= 0  # one pass, band kept


def test_band_dropped_mid_pass_falls_back_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    # Bands kept for the first blocks, then too many: the second pass alone decides the text ranks.
    calls, kept = _counting_blocks(monkeypatch), _scan_spy(monkeypatch)
    img, txt, t2i, pos = _tied_data(10, 30, 4, 6)
    embedding_ranks(img, txt, t2i, pos, rows_per_block=7)
    monkeypatch.setattr(retrieval_chunked, "_BAND_LIMIT", sum(kept) // 2)
    calls.clear()
    kept.clear()
    got = embedding_ranks(img, txt, t2i, pos, rows_per_block=7)
    assert kept[0] >= 0 and kept[-1] == -1 and len(calls) == 10
    ri, rt = retrieval_ranks(similarity(img, txt), t2i, pos)
    assert np.array_equal(got.i2t, ri) and np.array_equal(got.t2i, rt)


def test_all_scores_tied_in_a_tall_block() -> None:
    # 300 rows in one block: per-column counts pass 255, where their uint8 partial sums are split.
    got = embedding_ranks(np.ones((300, 2)), np.ones((600, 2)), np.repeat(np.arange(300), 2))
    assert got.i2t.tolist() == [598] * 300 and got.t2i.tolist() == [299] * 600
    assert retrieval_chunked._column_counts(np.ones((600, 3), dtype=bool)).tolist() == [600] * 3


def test_default_blocks_are_multiples_of_16_rows() -> None:
    # gemm kernels handle rows past a multiple of their unroll apart; default blocks have none such.
    assert retrieval_chunked.block_rows(25_000, 32) == 80  # 2**21 // 25,000 = 83, rounded down
    assert retrieval_chunked.block_rows(25_000, 512) == 320  # wide vectors: 4x taller
    assert retrieval_chunked.block_rows(200_000, 32) == 10  # under 16 rows: not rounded
    assert retrieval_chunked.block_rows(10**9, 768) == 1


def test_default_blocks_with_a_short_last_block_equal_dense(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting_blocks(monkeypatch)
    monkeypatch.setattr(retrieval_chunked, "_BLOCK_ELEMENTS", 37 * 500 // 4)  # 37 rows -> 32 at 512-d
    img, txt, t2i = _float_data(11, 100, 5, 512)
    got = embedding_ranks(img, txt, t2i)
    assert calls == [0, 32, 64, 96]  # the last block has 4 rows
    sim = similarity(img, txt)
    ri, rt = retrieval_ranks(sim, t2i)
    assert np.array_equal(got.i2t, ri) and np.array_equal(got.t2i, rt)
    assert np.array_equal(got.top_text, np.argmax(sim, axis=1))


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_scores_overflowing_float32_named_like_dense() -> None:
    # Finite vectors whose dot products overflow float32: the norm bound fails, so blocks are checked.
    img, txt, t2i = _float_data(12, 10, 2, 8)
    img[7] = 1e20
    txt[:] = np.abs(txt) * 1e20
    with pytest.raises(MetricError, match="row 7 "):
        retrieval_ranks(similarity(img, txt), t2i)
    with pytest.raises(MetricError, match="row 7 "):
        embedding_ranks(img, txt, t2i, rows_per_block=3)
    assert not retrieval_chunked._scores_finite(img.astype(np.float64), txt.astype(np.float64))

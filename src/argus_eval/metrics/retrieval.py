"""Image-text retrieval: per-query ranks, Recall@K in both directions, and the COCO 1k five-fold protocol.

Conventions (conservative, deterministic):
- similarity is (n_images, n_texts); higher is better.
- A query's rank is the 0-based rank of its *best* positive: the number of negatives whose score is
  >= the best positive's score. Ties with a negative count against the query (a positive tied with a
  negative is ranked below it), so results never depend on sort order; ties among positives are free.
- i2t (image query): positives are the texts true of that image. t2i (text query): the images it is
  true of. Default ground truth is one-hot from text_to_image; `positives` gives multi-positive truth.
- A query is a hit at k when its rank < k. Recall values are fractions in [0, 1].
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from argus_eval.errors import MetricError

# Rows per chunk are chosen so a chunk's temporaries stay near this many elements (bounded memory).
_CHUNK_ELEMENTS = 1 << 23


def similarity(images: ArrayLike, texts: ArrayLike) -> NDArray[np.float32]:
    """(n_images, n_texts) dot products of image and text vectors, as float32.

    Accumulated in float64 and rounded once: a float32 BLAS product rounds each row by where it sits in
    the kernel's block, so two equal vectors (duplicate images, a model blind to its input) would score a
    text differently and break their tie by position, and a batch of 1 and a batch of 16 would rank
    differently. Rounded from float64, equal vectors tie exactly."""
    a = np.asarray(images, dtype=np.float64)
    b = np.asarray(texts, dtype=np.float64)
    out: NDArray[np.float32] = (a @ b.T).astype(np.float32)
    return out


def _as_similarity(similarity: ArrayLike) -> NDArray[np.floating]:
    sim = np.asarray(similarity)
    if sim.ndim != 2 or sim.shape[0] == 0 or sim.shape[1] == 0:
        raise MetricError(
            f"similarity must be a non-empty 2-D (n_images, n_texts) array, got shape {sim.shape}; "
            "pass image-by-text scores"
        )
    if not np.issubdtype(sim.dtype, np.floating):
        sim = sim.astype(np.float64)
    return sim


def positive_matrix(
    text_to_image: ArrayLike, positives: ArrayLike | sp.spmatrix | sp.sparray | None, shape: tuple[int, int]
) -> sp.csr_matrix:
    """Ground truth as a boolean CSR matrix of shape (n_texts, n_images)."""
    n_images, n_texts = shape
    if positives is not None:
        pos = sp.csr_matrix(positives, dtype=bool)
        if pos.shape != (n_texts, n_images):
            raise MetricError(
                f"positives has shape {pos.shape}, expected (n_texts, n_images) = {(n_texts, n_images)}; "
                "transpose it or check the similarity matrix orientation"
            )
        pos.eliminate_zeros()
        return pos
    t2i = np.asarray(text_to_image)
    if t2i.shape != (n_texts,) or not np.issubdtype(t2i.dtype, np.integer):
        raise MetricError(
            f"text_to_image must be an integer array of length n_texts={n_texts}, got shape {t2i.shape} "
            f"dtype {t2i.dtype}; give the image index of every text"
        )
    bad = np.flatnonzero((t2i < 0) | (t2i >= n_images))
    if bad.size:
        raise MetricError(
            f"text_to_image[{bad[0]}] = {t2i[bad[0]]} is outside 0..{n_images - 1}; "
            "fix the text's image index"
        )
    data = np.ones(n_texts, dtype=bool)
    return sp.csr_matrix((data, (np.arange(n_texts), t2i)), shape=(n_texts, n_images))


def require_positives(pos: sp.csr_matrix, what: str) -> NDArray[np.intp]:
    """Positives per query of (n_queries, n_candidates) truth; MetricError naming a query with none."""
    counts: NDArray[np.intp] = np.diff(pos.indptr)
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        raise MetricError(
            f"{what} {empty[0]} has no positive; every query needs at least one true match "
            "(check text_to_image / positives)"
        )
    return counts


def _best_positive(
    sim: NDArray[np.floating], pos: sp.csr_matrix, query_axis: int, what: str
) -> tuple[NDArray[np.floating], NDArray[np.int64]]:
    """Best positive score per query and how many positives reach it.

    pos is (n_queries, n_candidates); query_axis says which axis of sim the queries index.
    """
    counts = require_positives(pos, what)
    rows = np.repeat(np.arange(pos.shape[0]), counts)
    cols = pos.indices
    vals = sim[rows, cols] if query_axis == 0 else sim[cols, rows]
    best = np.maximum.reduceat(vals, pos.indptr[:-1])
    at_best = np.add.reduceat((vals >= best[rows]).astype(np.int64), pos.indptr[:-1])
    return best, at_best


def check_finite(chunk: NDArray[np.floating], row0: int) -> None:
    """MetricError naming the first row (row0 + offset in chunk) holding NaN or inf."""
    # A row sum is one cheap vectorised pass; only on a non-finite sum do we look element-wise.
    with np.errstate(over="ignore", invalid="ignore"):
        sums = chunk.sum(axis=1)
    if np.isfinite(sums).all():
        return
    bad = np.flatnonzero(~np.isfinite(chunk).all(axis=1))
    if bad.size:
        raise MetricError(
            f"similarity row {row0 + bad[0]} (image {row0 + bad[0]}) contains NaN or inf; "
            "fix the embeddings or scores for that image"
        )


def retrieval_ranks(
    similarity: ArrayLike,
    text_to_image: ArrayLike,
    positives: ArrayLike | sp.spmatrix | sp.sparray | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Per-query 0-based ranks of the best positive: (i2t rank per image, t2i rank per text).

    rank = number of negatives scoring >= the best positive (ties count against the query).
    positives, if given, is a (n_texts, n_images) boolean/sparse matrix of true pairs; otherwise the
    one-hot of text_to_image. Processes the matrix in row chunks so memory stays bounded.
    Raises MetricError on NaN/inf (naming the row), bad shapes, or a query with no positive.
    """
    sim = _as_similarity(similarity)
    n_images, n_texts = sim.shape
    pos_t = positive_matrix(text_to_image, positives, sim.shape)  # (n_texts, n_images)
    pos_i = pos_t.T.tocsr()  # (n_images, n_texts)

    # Finite check first, so NaN never reaches the gathers below with a confusing message.
    step = max(1, _CHUNK_ELEMENTS // n_texts)
    for r0 in range(0, n_images, step):
        check_finite(sim[r0 : r0 + step], r0)

    best_i, at_best_i = _best_positive(sim, pos_i, 0, "image")
    best_t, at_best_t = _best_positive(sim, pos_t, 1, "text")

    ge_i = np.empty(n_images, dtype=np.int64)
    ge_t = np.zeros(n_texts, dtype=np.int64)
    for r0 in range(0, n_images, step):
        chunk = sim[r0 : r0 + step]
        ge_i[r0 : r0 + step] = np.count_nonzero(chunk >= best_i[r0 : r0 + step, None], axis=1)
        ge_t += np.count_nonzero(chunk >= best_t[None, :], axis=0)
    # Scores >= best include the positives that reach the best; they are not negatives.
    return ge_i - at_best_i, ge_t - at_best_t


def recall_from_ranks(ranks: ArrayLike, ks: Sequence[int] = (1, 5, 10)) -> dict[int, float]:
    """Fraction of queries whose 0-based rank is < k, for each k."""
    r = np.asarray(ranks)
    if r.size == 0:
        raise MetricError("recall_from_ranks got no ranks; pass at least one query")
    return {int(k): float(np.count_nonzero(r < k)) / r.size for k in ks}


def chance_recall_at_k(positives: ArrayLike | sp.spmatrix | sp.sparray, k: int) -> float:
    """Expected recall@k of a uniformly random ranking, for (n_queries, n_candidates) boolean truth.

    A query with p positives among n candidates misses only if all k picks are negatives:
    1 - C(n-p, k) / C(n, k). With one positive per query this is k / n.
    """
    pos = sp.csr_matrix(positives, dtype=bool)
    n = pos.shape[1]
    if k < 1 or n == 0:
        raise MetricError(f"chance_recall_at_k needs k >= 1 and at least one candidate (k={k}, n={n})")
    p = np.asarray(pos.sum(axis=1), dtype=np.float64).ravel()
    i = np.arange(min(k, n), dtype=np.float64)
    miss = np.prod(np.clip((n - p[:, None] - i) / (n - i), 0.0, None), axis=1)
    return float(np.mean(1.0 - miss))


def recall_at_k(
    similarity: ArrayLike,
    text_to_image: ArrayLike,
    ks: Sequence[int] = (1, 5, 10),
    positives: ArrayLike | sp.spmatrix | sp.sparray | None = None,
) -> dict[str, float]:
    """Recall@K in both directions as fractions, under keys 'i2t_R@k' and 't2i_R@k'.

    i2t: an image is a hit at k when any positive text is in its top k; t2i: a text is a hit when any
    positive image is in its top k. Tie rule and positives as in retrieval_ranks.
    """
    for k in ks:
        if int(k) < 1:
            raise MetricError(f"k={k} in ks must be >= 1; use positive cut-offs such as (1, 5, 10)")
    r_i, r_t = retrieval_ranks(similarity, text_to_image, positives)
    out: dict[str, float] = {}
    for k, v in recall_from_ranks(r_i, ks).items():
        out[f"i2t_R@{k}"] = v
    for k, v in recall_from_ranks(r_t, ks).items():
        out[f"t2i_R@{k}"] = v
    return out


def mean_rank(ranks: ArrayLike) -> float:
    """Mean rank, 1-based (the usual 'MeanR': 1 means the best positive is always first)."""
    r = np.asarray(ranks)
    if r.size == 0:
        raise MetricError("mean_rank got no ranks; pass at least one query")
    return float(r.mean()) + 1.0


def median_rank(ranks: ArrayLike) -> float:
    """Median rank, 1-based (the usual 'MedR')."""
    r = np.asarray(ranks)
    if r.size == 0:
        raise MetricError("median_rank got no ranks; pass at least one query")
    return float(np.median(r)) + 1.0


def five_fold_1k(
    similarity: ArrayLike,
    text_to_image: ArrayLike,
    ks: Sequence[int] = (1, 5, 10),
    positives: ArrayLike | sp.spmatrix | sp.sparray | None = None,
    n_folds: int = 5,
) -> dict[str, float]:
    """COCO 1k protocol: Recall@K averaged over n_folds consecutive image folds (5 x 1,000 for COCO 5k).

    Fold f holds images [f*m, (f+1)*m) with m = n_images / n_folds and the texts whose text_to_image
    falls in it; positives (if given) are restricted to the fold. n_images must divide evenly.
    """
    sim = _as_similarity(similarity)
    n_images, n_texts = sim.shape
    if n_folds < 1 or n_images % n_folds:
        raise MetricError(
            f"cannot split {n_images} images into {n_folds} equal folds; "
            "use the COCO 5k split (5,000 images) or pass n_folds dividing n_images"
        )
    t2i = np.asarray(text_to_image)
    pos_t = positive_matrix(t2i, positives, sim.shape)
    if positives is not None and t2i.shape != (n_texts,):
        raise MetricError(
            f"text_to_image has shape {t2i.shape}, expected ({n_texts},); five_fold_1k needs it to assign "
            "texts to folds"
        )
    m = n_images // n_folds
    totals: dict[str, float] = {}
    for f in range(n_folds):
        texts = np.flatnonzero((t2i >= f * m) & (t2i < (f + 1) * m))
        if texts.size == 0:
            raise MetricError(
                f"fold {f} (images {f * m}..{(f + 1) * m - 1}) has no texts; check text_to_image"
            )
        sub_pos = pos_t[texts][:, f * m : (f + 1) * m]
        res = recall_at_k(sim[f * m : (f + 1) * m][:, texts], t2i[texts] - f * m, ks, sub_pos)
        for key, v in res.items():
            totals[key] = totals.get(key, 0.0) + v
    return {key: v / n_folds for key, v in totals.items()}

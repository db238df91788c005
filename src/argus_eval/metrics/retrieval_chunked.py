"""Retrieval ranks straight from embeddings, one block of image rows at a time.

The result equals `retrieval_ranks(similarity(images, texts), ...)` and `argmax` of that matrix without
ever holding the (n_images, n_texts) matrix: a block of image rows times every text, as a float64
product rounded to float32 exactly as `similarity` does. The float32 scores are what every comparison
uses, and they equal the whole matrix's entries: the BLAS float64 product of a block can differ from the
same rows of the whole product in the last float64 bit (the kernel treats a block's edge rows and each
thread's share differently; the whole product itself changes that way with the BLAS thread count), and
rounding to float32 hides such a difference unless the float64 value lies within a bit of a float32
rounding midpoint. Measured: 5,000 x 25,000 x 512 in default blocks, no float64 difference at all;
300 x 1,500 x 512 in blocks of 2 to 100 rows, 0.02-0.2% of float64 entries differ, none in float32;
the tests compare bit for bit.
A one-row product goes through gemv, which sums in another order altogether, so a single row is
multiplied as two copies of itself; nothing is computed over text subsets.

A text's rank needs its best positive score before images are counted against it, and its positives
can lie in any block. So one pass takes image ranks, top texts and the positive pairs' exact scores, and
counts images against a bracket [low, high] of each text's best positive, from the pairs' dot products
summed in another order (within a few float32 ulps): a score above high is counted, one below low is
not, and the few inside are kept and compared once the exact best is known. When some exact best falls
outside its bracket, or too many scores fall inside (massive ties), the blocks are computed a second
time and counted against the exact bests: the result is exact either way.
Conventions (tie rule, positives) are those of `argus_eval.metrics.retrieval`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from argus_eval.errors import MetricError
from argus_eval.metrics.retrieval import check_finite, positive_matrix, require_positives

# Elements of one float64 block (256 MiB); its float32 copy and comparison masks come on top.
_BLOCK_ELEMENTS = 1 << 25
# Most scores kept inside the brackets (12 bytes each, 192 MiB) before falling back to a second pass.
_BAND_LIMIT = 1 << 24
# Positive pairs whose products are held at once while bracketing.
_PAIR_STEP = 8192


@dataclass(frozen=True)
class EmbeddingRanks:
    """Per-query 0-based ranks in both directions and each image's top-scoring text (first on ties)."""

    i2t: NDArray[np.int64]
    t2i: NDArray[np.int64]
    top_text: NDArray[np.int64]


def block_rows(n_texts: int) -> int:
    """Image rows per block so one float64 block holds about 2**25 scores (at least one row)."""
    return max(1, _BLOCK_ELEMENTS // max(1, n_texts))


def _vectors(x: ArrayLike, what: str) -> NDArray[np.float64]:
    v = np.asarray(x, dtype=np.float64)
    if v.ndim != 2 or v.shape[0] == 0 or v.shape[1] == 0:
        raise MetricError(
            f"{what} embeddings must be a non-empty 2-D (n, dim) array, got shape {v.shape}; "
            f"pass one {what[:-1]} vector per row"
        )
    return v


class _Blocks:
    """Rows r0:r1 of similarity(a, b), bit for bit, in buffers made once per call and reused for every
    block: a fresh 256 MiB block per step costs as much in page faults as the product itself."""

    def __init__(self, a: NDArray[np.float64], b: NDArray[np.float64], step: int) -> None:
        self.a, self.bt = a, b.T
        rows = min(step, a.shape[0])
        self._f64 = np.empty((rows, b.shape[0]), dtype=np.float64)
        self._f32 = np.empty((rows, b.shape[0]), dtype=np.float32)
        self.masks = (np.empty(self._f32.shape, dtype=bool), np.empty(self._f32.shape, dtype=bool))

    def __call__(self, r0: int, r1: int) -> NDArray[np.float32]:
        k = r1 - r0
        if k == 1:  # numpy sends a one-row product to gemv, which sums in another order than gemm
            rows = np.concatenate((self.a[r0:r1], self.a[r0:r1]))
            np.copyto(self._f32[:1], (rows @ self.bt)[:1], casting="same_kind")
        else:
            np.matmul(self.a[r0:r1], self.bt, out=self._f64[:k])
            np.copyto(self._f32[:k], self._f64[:k], casting="same_kind")
        return self._f32[:k]


@dataclass
class _Counts:
    """What one pass over the blocks gathers (embedding_ranks): image ranks and top texts, each text's
    count of scores above its bracket, and the scores inside the brackets (None: too many kept)."""

    i2t: NDArray[np.int64]
    top: NDArray[np.int64]
    ge_t: NDArray[np.int64]
    pos_vals: NDArray[np.float32]  # score of each positive pair, in pos_i order
    band: tuple[list[NDArray[np.intp]], list[NDArray[np.float32]]] | None
    kept: int = 0


def _scan(
    blk: NDArray[np.float32],
    r0: int,
    pos_i: sp.csr_matrix,
    brackets: tuple[NDArray[np.float32], NDArray[np.float32]],
    masks: tuple[NDArray[np.bool_], NDArray[np.bool_]],
    out: _Counts,
) -> None:
    """Add the block of image rows r0:r0+len(blk) to out."""
    r1 = r0 + blk.shape[0]
    low, high = brackets
    above, near = masks[0][: blk.shape[0]], masks[1][: blk.shape[0]]
    p0, p1 = pos_i.indptr[r0], pos_i.indptr[r1]
    counts = np.diff(pos_i.indptr[r0 : r1 + 1])
    local = np.repeat(np.arange(r1 - r0), counts)
    vals = blk[local, pos_i.indices[p0:p1]]
    out.pos_vals[p0:p1] = vals
    best = np.maximum.reduceat(vals, pos_i.indptr[r0:r1] - p0)
    at_best = np.add.reduceat((vals >= best[local]).astype(np.int64), pos_i.indptr[r0:r1] - p0)
    np.greater_equal(blk, best[:, None], out=near)
    out.i2t[r0:r1] = np.count_nonzero(near, axis=1) - at_best
    out.top[r0:r1] = np.argmax(blk, axis=1)
    np.greater(blk, high[None, :], out=above)
    out.ge_t += np.count_nonzero(above, axis=0)
    if out.band is None:
        return
    np.greater_equal(blk, low[None, :], out=near)
    near &= ~above
    out.kept += int(np.count_nonzero(near))
    if out.kept > _BAND_LIMIT:  # counted before np.nonzero, whose indices would cost 16 bytes each
        out.band = None  # massive ties: count in a second pass instead of keeping them all
        return
    r, c = np.nonzero(near)
    out.band[0].append(c)
    out.band[1].append(blk[r, c])


def embedding_ranks(
    images: ArrayLike,
    texts: ArrayLike,
    text_to_image: ArrayLike,
    positives: ArrayLike | sp.spmatrix | sp.sparray | None = None,
    rows_per_block: int | None = None,
) -> EmbeddingRanks:
    """Ranks of `retrieval_ranks(similarity(images, texts), text_to_image, positives)` and the top text
    per image, computed in blocks of rows_per_block image rows (default: `block_rows(n_texts)`).

    Memory beyond the inputs is one block (float64 and float32, two masks) plus per-query vectors.
    Raises MetricError as retrieval_ranks does (NaN/inf naming the row, bad shapes, a query with no
    positive).
    """
    a, b = _vectors(images, "images"), _vectors(texts, "texts")
    if a.shape[1] != b.shape[1]:
        raise MetricError(
            f"image vectors have {a.shape[1]} dimensions but text vectors {b.shape[1]}; "
            "embed both with the same model"
        )
    n_images, n_texts = a.shape[0], b.shape[0]
    step = block_rows(n_texts) if rows_per_block is None else rows_per_block
    if step < 1:
        raise MetricError(f"rows_per_block={step} must be >= 1")
    pos_t = positive_matrix(text_to_image, positives, (n_images, n_texts))  # (n_texts, n_images)
    pos_i = pos_t.T.tocsr()  # (n_images, n_texts)
    starts = range(0, n_images, step)
    blocks = _Blocks(a, b, step)
    if np.any(np.diff(pos_i.indptr) == 0) or np.any(np.diff(pos_t.indptr) == 0):
        # As retrieval_ranks: a NaN row is reported before a query without positives.
        for r0 in starts:
            check_finite(blocks(r0, min(r0 + step, n_images)), r0)
        require_positives(pos_i, "image")
        require_positives(pos_t, "text")

    low, high = _brackets(a, b, pos_i)
    i64 = np.int64
    out = _Counts(
        np.empty(n_images, i64), np.empty(n_images, i64), np.zeros(n_texts, i64),
        np.empty(pos_i.nnz, dtype=np.float32), ([], []),
    )  # fmt: skip
    for r0 in starts:
        blk = blocks(r0, min(r0 + step, n_images))
        check_finite(blk, r0)
        _scan(blk, r0, pos_i, (low, high), blocks.masks, out)
    cols = pos_i.indices
    best_t = np.full(n_texts, -np.inf, dtype=np.float32)
    np.maximum.at(best_t, cols, out.pos_vals)
    at_best_t = np.bincount(cols[out.pos_vals >= best_t[cols]], minlength=n_texts).astype(np.int64)
    inside = low <= best_t
    inside &= best_t <= high
    ge_t = out.ge_t
    if out.band is not None and bool(inside.all()):
        band_cols, band_vals = np.concatenate(out.band[0]), np.concatenate(out.band[1])
        ge_t += np.bincount(band_cols[band_vals >= best_t[band_cols]], minlength=n_texts)
    else:
        ge_t = np.zeros(n_texts, dtype=np.int64)
        for r0 in starts:
            ge_t += np.count_nonzero(blocks(r0, min(r0 + step, n_images)) >= best_t[None, :], axis=0)
    return EmbeddingRanks(i2t=out.i2t, t2i=ge_t - at_best_t, top_text=out.top)


def _brackets(
    a: NDArray[np.float64], b: NDArray[np.float64], pos_i: sp.csr_matrix
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """Per text, float32 bounds meant to hold its best positive score (checked by the caller).

    Each positive pair's dot product is summed here in another order than gemm's, so it is off by
    about 2**-52 times the sum of |products|; rounding to float32 adds an ulp. The bounds allow both."""
    n_texts = b.shape[0]
    rows = np.repeat(np.arange(a.shape[0]), np.diff(pos_i.indptr))
    cols = pos_i.indices
    approx = np.empty(cols.size, dtype=np.float64)
    mag = np.empty(cols.size, dtype=np.float64)
    for s in range(0, cols.size, _PAIR_STEP):
        prod = a[rows[s : s + _PAIR_STEP]] * b[cols[s : s + _PAIR_STEP]]
        approx[s : s + _PAIR_STEP] = prod.sum(axis=1)
        mag[s : s + _PAIR_STEP] = np.abs(prod).sum(axis=1)
    tol = mag * 2.0**-40 + 2.0 * np.spacing(np.abs(approx).astype(np.float32)).astype(np.float64)
    best = np.full(n_texts, -np.inf)
    tol_t = np.zeros(n_texts)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN vectors: the finite check names them
        np.maximum.at(best, cols, approx)
        np.maximum.at(tol_t, cols, tol)
        lo64, hi64 = best - tol_t, best + tol_t
        low, high = lo64.astype(np.float32), hi64.astype(np.float32)
        low = np.where(low > lo64, np.nextafter(low, np.float32(-np.inf)), low)
        high = np.where(high < hi64, np.nextafter(high, np.float32(np.inf)), high)
    return low, high

"""Retrieval ranks straight from embeddings, one block of image rows at a time.

The result equals `retrieval_ranks(similarity(images, texts), ...)` and `argmax` of that matrix without
ever holding the (n_images, n_texts) matrix: a block of image rows times every text, as a float64
product rounded to float32 exactly as `similarity` does. The float32 scores are what every comparison
uses, and they equal the whole matrix's entries: the BLAS float64 product of a block can differ from the
same rows of the whole product in the last float64 bit (the kernel treats a block's leftover rows past
a multiple of its row unroll, and each thread's share, differently; the whole product itself changes
that way with the BLAS thread count), and rounding to float32 hides such a difference unless the float64
value lies within a bit of a float32 rounding midpoint (about one in 2**28 of the entries that differ).
Default blocks are a multiple of 16 rows, so only the last block has leftover rows. Measured (OpenBLAS,
2 threads): 5,000 x 25,000 at 32 and 512 dimensions in default blocks (80 and 320 rows), no float64
difference at all; in blocks of 83 or 335 rows, the last row of each block differs (0.3-0.6% of all
entries); 300 x 1,500 x 512 in blocks of 2 to 50 rows, 3-84% of float64 entries differ; none in float32
anywhere. The tests compare bit for bit.
A one-row product goes through gemv, which sums in another order altogether, so a single row is
multiplied as two copies of itself; nothing is computed over text subsets.

Each block first gives its image ranks and top texts as is; then its positive pairs are set to -inf,
so the text side counts negatives only: a text's rank is its number of negatives scoring >= its best
positive, the same integer retrieval_ranks gets by counting every score and subtracting the positives.
That best needs all of the text's positives, which can lie in any block. So the one pass counts
negatives against a bracket [low, high] of each text's best positive, from the pairs' dot products
summed in another order (within a few float32 ulps): a score above high is counted, one below low is
not, and the few inside are kept and compared once the exact best is known. A column's count inside is
its count >= low minus its count > high (needed anyway), so only the columns with some are searched,
not a mask of the whole block. When some exact best falls outside its bracket, or too many scores fall
inside (massive ties), the blocks are computed a second time and counted against the exact bests: the
result is exact either way.
Conventions (tie rule, positives) are those of `argus_eval.metrics.retrieval`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from argus_eval.errors import MetricError
from argus_eval.metrics.retrieval import check_finite, positive_matrix, require_positives

# Scores in one block (16 MiB as float64; its float32 copy and two masks add 12 MiB): small enough for
# the passes over it to run in cache and for a fresh process to fault its buffers in quickly; not
# smaller, as each product waits for every BLAS thread, slow when another process holds a core.
_BLOCK_ELEMENTS = 1 << 21
# Wide vectors get taller blocks, up to this factor: each product repacks all of the text matrix, a
# cost per block that is worth amortising only when the product outweighs the passes.
_WIDE_FACTOR = 4
# Most scores kept inside the brackets (12 bytes each, 192 MiB) before falling back to a second pass.
_BAND_LIMIT = 1 << 24
# Pair-by-dimension products held at once while bracketing (2 MiB as float64, four such arrays).
_PAIR_ELEMENTS = 1 << 18


@dataclass(frozen=True)
class EmbeddingRanks:
    """Per-query 0-based ranks in both directions and each image's top-scoring text (first on ties)."""

    i2t: NDArray[np.int64]
    t2i: NDArray[np.int64]
    top_text: NDArray[np.int64]


def block_rows(n_texts: int, dim: int = 1) -> int:
    """Image rows per block (at least one): about 2**21 scores, times dim // 128 (at most 4) for
    vectors of 256 dimensions or more, rounded down to a multiple of 16 rows from 16 on (gemm kernels
    sum leftover rows past a multiple of their unroll differently; see the module docstring)."""
    factor = min(_WIDE_FACTOR, max(1, dim // 128))
    rows = factor * _BLOCK_ELEMENTS // max(1, n_texts)
    return rows - rows % 16 if rows >= 16 else max(1, rows)


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
    block: fresh arrays per step would cost page faults and evict the cache the passes run in."""

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
    count of negatives above its bracket, and the negatives inside the brackets (None: too many)."""

    i2t: NDArray[np.int64]
    top: NDArray[np.int64]
    t2i: NDArray[np.int64]
    pos_vals: NDArray[np.float32]  # score of each positive pair, in pos_i order
    band: tuple[list[NDArray[np.intp]], list[NDArray[np.float32]]] | None
    kept: int = 0


def _row_counts(mask: NDArray[np.bool_]) -> NDArray[np.int64]:
    """True values per row: count_nonzero on each contiguous row is ~4x faster than with axis=1,
    which casts every bool to intp."""
    return np.fromiter((np.count_nonzero(row) for row in mask), dtype=np.int64, count=mask.shape[0])


def _column_counts(mask: NDArray[np.bool_]) -> NDArray[np.int64]:
    """True values per column: up to 255 rows are added as uint8 (vectorised, cannot overflow), ~10x
    faster than count_nonzero with axis=0, which casts every bool to intp."""
    u8 = mask.view(np.uint8)
    total = np.zeros(mask.shape[1], dtype=np.int64)
    for s in range(0, mask.shape[0], 255):
        total += np.add.reduce(u8[s : s + 255], axis=0, dtype=np.uint8)
    return total


def _mask_positives(blk: NDArray[np.float32], r0: int, pos_i: sp.csr_matrix) -> None:
    """Set the block's positive pairs to -inf, so counts over the block count negatives only."""
    r1 = r0 + blk.shape[0]
    local = np.repeat(np.arange(r1 - r0), np.diff(pos_i.indptr[r0 : r1 + 1]))
    blk[local, pos_i.indices[pos_i.indptr[r0] : pos_i.indptr[r1]]] = -np.inf


def _scan(
    blk: NDArray[np.float32],
    r0: int,
    pos_i: sp.csr_matrix,
    brackets: tuple[NDArray[np.float32], NDArray[np.float32]],
    masks: tuple[NDArray[np.bool_], NDArray[np.bool_]],
    out: _Counts,
) -> None:
    """Add the block of image rows r0:r0+len(blk) to out (which overwrites the block's positives)."""
    r1 = r0 + blk.shape[0]
    low, high = brackets
    ge, above = masks[0][: blk.shape[0]], masks[1][: blk.shape[0]]
    p0, p1 = pos_i.indptr[r0], pos_i.indptr[r1]
    starts = pos_i.indptr[r0:r1] - p0
    local = np.repeat(np.arange(r1 - r0), np.diff(pos_i.indptr[r0 : r1 + 1]))
    vals = blk[local, pos_i.indices[p0:p1]]
    out.pos_vals[p0:p1] = vals
    best = np.maximum.reduceat(vals, starts)
    at_best = np.add.reduceat((vals >= best[local]).astype(np.int64), starts)
    np.greater_equal(blk, best[:, None], out=ge)
    out.i2t[r0:r1] = _row_counts(ge) - at_best
    out.top[r0:r1] = np.argmax(blk, axis=1)
    # Texts' side: negatives only. retrieval_ranks counts every score >= the best and subtracts the
    # positives among them; counting negatives alone gives the same integers.
    _mask_positives(blk, r0, pos_i)
    np.greater(blk, high[None, :], out=above)
    n_above = _column_counts(above)
    out.t2i += n_above
    if out.band is None:
        return
    # above is a subset of ge (low <= high), so the difference is each column's count in the band.
    np.greater_equal(blk, low[None, :], out=ge)
    n_band = _column_counts(ge) - n_above
    out.kept += int(n_band.sum())
    if out.kept > _BAND_LIMIT:  # checked before extracting, whose indices would cost 16 bytes each
        out.band = None  # massive ties: count in a second pass instead of keeping them all
        return
    cols = np.flatnonzero(n_band)  # usually few: a whole-block np.nonzero would scan every entry
    if cols.size:
        r, c = np.nonzero(ge[:, cols] & ~above[:, cols])
        out.band[0].append(cols[c])
        out.band[1].append(blk[r, cols[c]])


def embedding_ranks(
    images: ArrayLike,
    texts: ArrayLike,
    text_to_image: ArrayLike,
    positives: ArrayLike | sp.spmatrix | sp.sparray | None = None,
    rows_per_block: int | None = None,
) -> EmbeddingRanks:
    """Ranks of `retrieval_ranks(similarity(images, texts), text_to_image, positives)` and the top text
    per image, computed in blocks of rows_per_block image rows (default: `block_rows(n_texts, dim)`).

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
    step = block_rows(n_texts, a.shape[1]) if rows_per_block is None else rows_per_block
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
    out = _Counts(
        i2t=np.empty(n_images, np.int64),
        top=np.empty(n_images, np.int64),
        t2i=np.zeros(n_texts, np.int64),
        pos_vals=np.empty(pos_i.nnz, dtype=np.float32),
        # np.concatenate needs one array, and often no negative falls inside any bracket
        band=([np.empty(0, np.intp)], [np.empty(0, np.float32)]),
    )
    finite = _scores_finite(a, b)
    for r0 in starts:
        blk = blocks(r0, min(r0 + step, n_images))
        if not finite:
            check_finite(blk, r0)
        _scan(blk, r0, pos_i, (low, high), blocks.masks, out)
    cols = pos_i.indices
    best_t = np.full(n_texts, -np.inf, dtype=np.float32)
    np.maximum.at(best_t, cols, out.pos_vals)
    inside = low <= best_t
    inside &= best_t <= high
    if out.band is not None and bool(inside.all()):
        band_cols, band_vals = np.concatenate(out.band[0]), np.concatenate(out.band[1])
        t2i = out.t2i + np.bincount(band_cols[band_vals >= best_t[band_cols]], minlength=n_texts)
    else:
        t2i = np.zeros(n_texts, dtype=np.int64)
        ge = blocks.masks[0]
        for r0 in starts:
            blk = blocks(r0, min(r0 + step, n_images))
            _mask_positives(blk, r0, pos_i)
            t2i += _column_counts(np.greater_equal(blk, best_t[None, :], out=ge[: blk.shape[0]]))
    return EmbeddingRanks(i2t=out.i2t, t2i=t2i, top_text=out.top)


def _scores_finite(a: NDArray[np.float64], b: NDArray[np.float64]) -> bool:
    """Whether every float32 score is surely finite, so blocks need no NaN/inf check. By Cauchy-Schwarz
    |a_i . b_j| <= |a_i| |b_j|; a bound 30 times below float32's largest value leaves room for every
    rounding on the way (each relative, about dim * 2**-53). NaN or inf in a vector fails the bound."""
    with np.errstate(over="ignore", invalid="ignore"):
        norms = [float(np.sqrt(np.einsum("ij,ij->i", v, v).max())) for v in (a, b)]
        return bool(norms[0] * norms[1] < 1e37)  # False for NaN or inf


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
    step = max(1, _PAIR_ELEMENTS // a.shape[1])
    for s in range(0, cols.size, step):
        prod = a[rows[s : s + step]] * b[cols[s : s + step]]
        approx[s : s + step] = prod.sum(axis=1)
        mag[s : s + step] = np.abs(prod).sum(axis=1)
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

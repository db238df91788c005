"""BLEU-1..4 exactly as pycocoevalcap's BleuScorer (option 'closest'), vectorised with sparse counts.

Quirks kept: effective reference length is the closest reference length (ties -> the shorter), the
epsilons tiny=1e-15 (numerators) and small=1e-9 (denominators), and per-sentence scores computed with the
same formula as the corpus score.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from argus_eval.metrics._ngrams import NgramCounts

_TINY = 1e-15
_SMALL = 1e-9


def bleu_stats(
    counts: list[NgramCounts],
    n_images: int,
    ref_image: NDArray[np.int64],
    cand_len: NDArray[np.int64],
    ref_len: NDArray[np.int64],
) -> NDArray[np.float64]:
    """Per-image additive statistics (n_images, 2n+2): clipped matches 1..n, guesses 1..n, testlen, reflen.

    counts index sentences as candidates 0..n_images-1 then references; ref_image maps each reference to
    its image (non-decreasing: references grouped by image). Clipping: a candidate n-gram counts at
    most its max count in any one reference.
    """
    n = len(counts)
    stats = np.zeros((n_images, 2 * n + 2), dtype=np.float64)
    for k, c in enumerate(counts):
        is_ref = c.sentence >= n_images
        # counts are sorted by (gram, sentence) and ref_image is non-decreasing, so these keys are sorted
        r_key = c.gram[is_ref] * n_images + ref_image[c.sentence[is_ref] - n_images]
        r_cnt = c.count[is_ref]
        first = np.flatnonzero(np.r_[True, r_key[1:] != r_key[:-1]]) if r_key.size else r_key
        u_key = r_key[first]
        u_max = np.maximum.reduceat(r_cnt, first) if r_key.size else r_cnt
        c_img = c.sentence[~is_ref]
        c_key = c.gram[~is_ref] * n_images + c_img
        pos = np.minimum(np.searchsorted(u_key, c_key), max(u_key.size - 1, 0))
        found = (u_key[pos] == c_key) if u_key.size else np.zeros(c_key.size, dtype=bool)
        ref_max = np.where(found, u_max[pos] if u_key.size else 0, 0)
        clipped = np.minimum(c.count[~is_ref], ref_max)
        stats[:, k] = np.bincount(c_img, weights=clipped, minlength=n_images)
        stats[:, n + k] = np.maximum(0, cand_len - k)
    stats[:, 2 * n] = cand_len
    stats[:, 2 * n + 1] = _closest_ref_len(cand_len, ref_image, ref_len, n_images)
    return stats


def _closest_ref_len(
    cand_len: NDArray[np.int64], ref_image: NDArray[np.int64], ref_len: NDArray[np.int64], n_images: int
) -> NDArray[np.int64]:
    """min over refs of (|ref_len - cand_len|, ref_len)[1], i.e. closest length, ties to the shorter."""
    big = int(ref_len.max(initial=0)) + 1
    key = np.abs(ref_len - cand_len[ref_image]) * big + ref_len
    best = np.full(n_images, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(best, ref_image, key)
    return best % big


def bleu_from_stats(stats: NDArray[np.float64], n: int = 4) -> NDArray[np.float64]:
    """BLEU-1..n from additive statistics: rows are sentences (per-sentence) or sums (corpus); (rows, n)."""
    s = np.atleast_2d(stats)
    correct, guess = s[:, :n], s[:, n : 2 * n]
    testlen, reflen = s[:, 2 * n], s[:, 2 * n + 1]
    out = np.empty((s.shape[0], n), dtype=np.float64)
    bleu = np.ones(s.shape[0], dtype=np.float64)
    for k in range(n):
        bleu = bleu * ((correct[:, k] + _TINY) / (guess[:, k] + _SMALL))
        out[:, k] = bleu ** (1.0 / (k + 1))
    ratio = (testlen + _TINY) / (reflen + _SMALL)
    short = ratio < 1
    with np.errstate(divide="ignore", over="ignore"):
        penalty = np.exp(1 - 1 / ratio)
    out[short] *= penalty[short, None]
    return out

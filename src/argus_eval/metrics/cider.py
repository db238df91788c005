"""CIDEr-D exactly as pycocoevalcap's CiderScorer, vectorised over sparse n-gram counts.

Quirks kept: document frequency from references only (images whose references contain the n-gram),
idf = log(n_images) - log(max(1, df)), clipped numerator min(v_cand, v_ref) * v_ref, cosine only when both
norms are non-zero, Gaussian length penalty with sigma=6 where "length" is the number of *bigrams*
(pycocoevalcap counts term frequencies of order 2), mean over n-gram orders, mean over references, x10.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from argus_eval.metrics._ngrams import NgramCounts


def cider_d(
    counts: Sequence[NgramCounts],
    n_images: int,
    ref_image: NDArray[np.int64],
    sigma: float = 6.0,
) -> NDArray[np.float64]:
    """Per-image CIDEr-D (n_images,); the corpus CIDEr is their mean. Sentence layout as in bleu_stats."""
    n_refs = ref_image.size
    ref_len = np.log(float(n_images))
    bigram_len = np.bincount(counts[1].sentence, weights=counts[1].count, minlength=n_images + n_refs)
    delta = bigram_len[n_images:] - bigram_len[ref_image]  # ref minus cand; squared below
    penalty = np.e ** (-(delta**2) / (2 * sigma**2))
    per_order = np.empty((n_refs, len(counts)), dtype=np.float64)
    for k, c in enumerate(counts):
        g = max(c.n_grams, 1)
        is_ref = c.sentence >= n_images
        r_sent = c.sentence[is_ref] - n_images
        r_gram = c.gram[is_ref]
        # counts are sorted by (gram, sentence) and ref_image is non-decreasing, so these keys are sorted
        r_key = r_gram * n_images + ref_image[r_sent]
        # df: number of images whose references contain the n-gram (each image once)
        distinct = np.r_[True, r_key[1:] != r_key[:-1]] if r_key.size else np.zeros(0, dtype=bool)
        df = np.bincount(r_gram[distinct], minlength=g).astype(np.float64)
        weight = ref_len - np.log(np.maximum(1.0, df))
        vec = c.count * weight[c.gram]
        norm = np.sqrt(np.bincount(c.sentence, weights=vec**2, minlength=n_images + n_refs))
        c_key = c.gram[~is_ref] * n_images + c.sentence[~is_ref]  # sorted, as r_key
        c_vec = vec[~is_ref]
        pos = np.minimum(np.searchsorted(c_key, r_key), max(c_key.size - 1, 0))
        found = (c_key[pos] == r_key) if c_key.size else np.zeros(r_key.size, dtype=bool)
        v_cand = np.where(found, c_vec[pos] if c_key.size else 0.0, 0.0)
        v_ref = vec[is_ref]
        dot = np.bincount(r_sent, weights=np.minimum(v_cand, v_ref) * v_ref, minlength=n_refs)
        denom = norm[ref_image] * norm[n_images:]
        val = np.where(denom != 0, dot / np.where(denom != 0, denom, 1.0), dot)
        per_order[:, k] = val * penalty
    score = np.zeros((n_images, len(counts)), dtype=np.float64)
    for k in range(len(counts)):
        score[:, k] = np.bincount(ref_image, weights=per_order[:, k], minlength=n_images)
    refs_per_image = np.bincount(ref_image, minlength=n_images)
    result: NDArray[np.float64] = score.mean(axis=1) / refs_per_image * 10.0
    return result

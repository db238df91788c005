"""ROUGE-L as COCO's Rouge scorer: LCS on space-split tokens, max precision and max recall over the
references, then F with beta=1.2 (not rouge-score's per-reference F)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

_BETA = 1.2


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists."""
    # No installed dependency does LCS over token lists; a bit-parallel LCS (Allison-Dix / Hyyro) on
    # Python ints is exact and O(len(a)) big-int operations instead of an O(len(a)*len(b)) table.
    if len(a) < len(b):
        a, b = b, a
    masks: dict[str, int] = {}
    for j, tok in enumerate(b):
        masks[tok] = masks.get(tok, 0) | (1 << j)
    full = (1 << len(b)) - 1
    v = full
    for tok in a:
        m = masks.get(tok)
        if m is None:
            continue
        u = v & m
        v = ((v + u) | (v - u)) & full
    return len(b) - v.bit_count()


def rouge_l(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> NDArray[np.float64]:
    """Per-image ROUGE-L (n_images,) for tokenised, space-joined candidates and their references."""
    out = np.empty(len(candidates), dtype=np.float64)
    for i, (cand, refs) in enumerate(zip(candidates, references, strict=True)):
        # split(" ") as COCO does: an empty caption is one empty token, not zero tokens
        tc = cand.split(" ")
        prec_max = rec_max = 0.0
        for ref in refs:
            tr = ref.split(" ")
            lcs = lcs_length(tr, tc)
            prec_max = max(prec_max, lcs / float(len(tc)))
            rec_max = max(rec_max, lcs / float(len(tr)))
        if prec_max != 0 and rec_max != 0:
            out[i] = ((1 + _BETA**2) * prec_max * rec_max) / float(rec_max + _BETA**2 * prec_max)
        else:
            out[i] = 0.0
    return out

"""Tokens to integer ids and n-grams to compact integer ids, shared by BLEU and CIDEr-D."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class NgramCounts:
    """Distinct (sentence, n-gram) pairs of one order n with their counts, sorted by (sentence, gram)."""

    sentence: NDArray[np.int64]
    gram: NDArray[np.int64]
    count: NDArray[np.int64]
    n_grams: int  # number of distinct n-grams of this order in the corpus


def ngram_counts(sentences: Sequence[Sequence[str]], n_max: int = 4) -> list[NgramCounts]:
    """Per-order sparse n-gram count tables for whitespace-tokenised sentences (index k is order k+1).

    An n-gram's id is the compacted pair (id of its (n-1)-gram prefix, id of its last token), so keys stay
    small integers at every order and equal n-grams get equal ids across all sentences.
    """
    vocab: dict[str, int] = {}
    ids = np.fromiter((vocab.setdefault(w, len(vocab)) for s in sentences for w in s), dtype=np.int64)
    lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
    sent = np.repeat(np.arange(len(sentences), dtype=np.int64), lengths)
    n_tok = ids.size
    prev = ids  # gram id of the (n-1)-gram starting at each position, -1 where there is none
    n_prev = len(vocab)
    out: list[NgramCounts] = []
    for n in range(1, n_max + 1):
        if n == 1:
            starts = np.arange(n_tok, dtype=np.int64)
            gram = ids
            n_grams = n_prev
        else:
            last = np.arange(n_tok - n + 1, dtype=np.int64) + n - 1
            starts = np.flatnonzero((sent[last] == sent[: last.size]) & (prev[: last.size] >= 0))
            key = prev[starts] * max(len(vocab), 1) + ids[starts + n - 1]
            uniq, gram = np.unique(key, return_inverse=True)
            n_grams = int(uniq.size)
            nxt = np.full(n_tok, -1, dtype=np.int64)
            nxt[starts] = gram
            prev = nxt
        pair = sent[starts] * max(n_grams, 1) + gram
        upair, cnt = np.unique(pair, return_counts=True)
        g = max(n_grams, 1)
        out.append(NgramCounts(upair // g, upair % g, cnt.astype(np.int64), n_grams))
    return out
